"""The Dagster UI as a user reads it after `ratings run`, in Chromium.

The lineage draws (the chains' month-before dependencies make no cycle), every check shows per month what it verified
after a range run and after a run of one month, and the list of the month just closed reads fresh.

The store holds the three months up to the month just closed, like a store rated every month; tests/test_ui.py's
store holds 2024's, like the demo, whose lists are old.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from pipeline.months import add_months
from tests.graph import cycles_between_assets, graph_of
from tests.screenshots import (
    CHECK_STATUSES,
    CHROMIUM,
    CHROMIUM_ARGS,
    GraphNotDrawn,
    asset_groups,
    check_partition_counts,
    drawn_nodes,
    free_port,
    graphql,
    group_path,
    require_nodes,
    start_ui,
    stop_ui,
    visit,
)

browser_test = pytest.mark.integration  # a webserver, Dagster runs and Chromium (tests/conftest.py)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (Debian package 'chromium'; `make test` installs it where it can)",
)


def months_to_just_closed() -> list[str]:
    from assets.definitions import month_just_closed
    from pipeline.settings import Settings

    last = month_just_closed(Settings())
    return [add_months(last, -2), add_months(last, -1), last]


@pytest.fixture(scope="module")
def rated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """Three months up to the month just closed rated in one range run (`ratings run`), then the webserver over it."""
    from assets.runtime.runs import run_store
    from pipeline.generator import generate

    months = months_to_just_closed()
    base = tmp_path_factory.mktemp("ui-checks")
    store, home = base / "store", base / "home"
    generate(str(store), seed=5, players=300, start=months[0], end=months[-1])
    with open(os.devnull, "w") as quiet:
        assert run_store(str(store), dagster_home=str(home), out=quiet)["success"]
    port = free_port()
    server = start_ui(str(store), str(home), port)
    try:
        yield SimpleNamespace(url=f"http://127.0.0.1:{port}", store=str(store), home=str(home), months=months)
    finally:
        stop_ui(server)


@pytest.fixture(scope="module")
def rerated(rated: SimpleNamespace) -> SimpleNamespace:
    """The same store after `ratings run --from M --to M` of its last month (what the monthly schedule does)."""
    from assets.runtime.runs import run_store

    month = rated.months[-1]
    with open(os.devnull, "w") as quiet:
        assert run_store(rated.store, month, month, dagster_home=rated.home, out=quiet)["success"]
    return SimpleNamespace(**vars(rated), month=month)


@pytest.fixture
def page() -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # Dagster draws only the nodes in view: the reports group links every scenario's lists and pages (eight
        # scenarios' in the demo), which a 1600 x 1000 window cuts off.
        yield browser.new_page(viewport={"width": 4400, "height": 4800})
        browser.close()


def opened(page, url: str):
    visit(page, url)
    return page


def test_the_asset_graph_is_acyclic_but_for_each_chains_own_month_before() -> None:
    """Dagster draws an asset's dependency on its own previous month, not a cycle through two assets."""
    from assets.definitions import build_defs

    graph = graph_of(build_defs("2024-01", "2024-06"))
    assert cycles_between_assets(graph) == []
    assets = graph["assets"]
    for scenario in ("glicko2", "stephenson"):
        # The state carries itself; the list reads the state (its own month before through it: a backfill runs a
        # self-dependent asset in no run with another it depends on); the state never reads the list.
        assert f"{scenario}/rating_list" not in assets[f"{scenario}/system_state"]["deps"]
        assert f"{scenario}/system_state" in assets[f"{scenario}/system_state"]["deps"]
        assert {"games", f"{scenario}/system_state"} == set(assets[f"{scenario}/rating_list"]["deps"])
    # A cycle is found where there is one.
    cyclic = {"assets": {**assets, "games": {**assets["games"], "deps": ["actual/rating_list"]}}}
    assert cycles_between_assets(cyclic)


@browser_test
@needs_chromium
def test_the_global_lineage_every_group_and_the_chains_lineage_tabs_draw(rated: SimpleNamespace, page) -> None:
    groups = asset_groups(rated.url)
    # FIDE's three lists: the standard list and the rapid and blitz lists, each a group of its own.
    assert {"ingest", "validate", "glicko2", "stephenson", "actual", "actual_rapid", "actual_blitz"} <= set(groups)
    require_nodes(drawn_nodes(opened(page, f"{rated.url}/asset-groups")), list(groups), "the global lineage")
    for group, keys in groups.items():
        nodes = drawn_nodes(opened(page, f"{rated.url}{group_path(rated.url, group)}"))
        # Every asset of the group is a node of its own (its name, then its latest event), not only a name.
        require_nodes(nodes, [key.rsplit("/", 1)[-1] for key in keys], f"group {group}", "Latest event")
    for asset in ("glicko2/rating_list", "glicko2/system_state", "stephenson/rating_list", "actual/rating_list"):
        nodes = drawn_nodes(opened(page, f"{rated.url}/assets/{asset}?view=lineage"))
        require_nodes(nodes, [asset.rsplit("/", 1)[-1], "games"], f"{asset}'s lineage tab")
    # The rapid list's lineage: its own list, the games and the standard list that seeds it (a second rating_list).
    nodes = drawn_nodes(opened(page, f"{rated.url}/assets/actual_rapid/rating_list?view=lineage"))
    require_nodes(nodes, ["rating_list", "games"], "actual_rapid/rating_list's lineage tab")
    assert nodes["rating_list"].count(" | ") >= 1, nodes["rating_list"]


@browser_test
@needs_chromium
def test_a_page_with_dagsters_cycle_error_is_not_taken_for_a_graph(page) -> None:
    """The refusal the lineage tests rely on: Dagster's cycle screen raises, it is never counted as a drawn graph."""
    page.set_content(
        "<body><h3>Cycle detected</h3><p>This graph contains a cycle and cannot be displayed.</p>"
        "<svg><foreignObject><div>games</div></foreignObject></svg></body>"
    )
    with pytest.raises(GraphNotDrawn, match="Cycle detected"):
        drawn_nodes(page, timeout=5_000)
    page.set_content(
        '<body><svg><foreignObject><div data-tooltip="games">games</div><span>Latest event</span></foreignObject>'
        '<foreignObject><span title="rating_list">rating_list</span></foreignObject></svg></body>'
    )
    nodes = drawn_nodes(page, timeout=5_000)
    assert nodes == {"games": "gamesLatest event", "rating_list": "rating_list"}
    require_nodes(nodes, ["games", "rating_list"], "a page")
    with pytest.raises(GraphNotDrawn, match="rating_list"):  # a link to an asset is not the asset's own node
        require_nodes(nodes, ["games", "rating_list"], "a page", "Latest event")


def every_month_passed(months: int) -> dict[str, int]:
    return {status: 0 for status in CHECK_STATUSES} | {"Passed": months}


@browser_test
@needs_chromium
def test_after_a_range_run_each_checks_partition_bar_reads_every_month_passed(rated: SimpleNamespace, page) -> None:
    months = len(rated.months)
    for asset, check in (
        ("games", "reconciliation"),  # the shared tables' step
        ("raw_games", "landing_zone_layout"),  # a warning
        ("actual/rating_list", "list_continuity"),  # a rule set's chain
        ("glicko2/system_state", "schema"),  # a system's chain
        ("glicko2/rated_games", "rating_points_conserved"),
    ):
        counts = check_partition_counts(page, rated.url, asset, check)
        assert counts == every_month_passed(months), (asset, check, counts)


def check_panel(page, url: str, asset: str) -> tuple[dict[str, str], str, str]:
    """What the asset's Checks tab says of each check (name -> status under it), the detail pane of the first check,
    and the asset's node in its group's lineage ('Asset checks N / M Passed').
    """
    name = asset.rsplit("/", 1)[-1]
    opened(page, f"{url}/assets/{asset}?view=checks")
    page.get_by_text("Latest execution").first.wait_for(timeout=30_000)
    page.wait_for_timeout(1_000)
    text = page.inner_text("body")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    start = lines.index(next(line for line in lines if line.startswith("Checks (")))
    listed: dict[str, str] = {}
    for at in range(start, lines.index("Latest execution")):
        # The list repeats each name, then its status: 'schema', 'schema', 'Succeeded'.
        if at + 2 < len(lines) and lines[at] == lines[at + 1] and lines[at + 2] != lines[at]:
            listed[lines[at]] = lines[at + 2]
    detail = " ".join(lines[lines.index("Latest execution") : lines.index("Latest execution") + 12])
    opened(page, f"{url}{group_path(url, asset.split('/')[0])}")
    page.wait_for_function("() => /Asset checks\\s*\\d+ \\/ \\d+/.test(document.body.innerText)", timeout=30_000)
    # The asset's own node, once its checks are counted (a node still loading shows 'Asset checks–': a chain group
    # is eighteen nodes or more, which the UI counts one after another).
    for _ in range(60):
        node = drawn_nodes(page)[name]
        if re.search(r"Asset checks\s*\d+ / \d+", node):
            break
        page.wait_for_timeout(1_000)
    return listed, detail, node


@browser_test
@needs_chromium
def test_after_a_one_month_run_the_checks_summary_agrees_with_their_detail_pane(rerated: SimpleNamespace, page) -> None:
    asset = "actual/rating_list"
    checks = {"schema", "no_duplicate_players", "floor_respected", "list_continuity"}
    listed, detail, node = check_panel(page, rerated.url, asset)
    assert listed == dict.fromkeys(checks, "Succeeded"), listed  # not "Skipped"
    assert "Evaluation result Passed" in detail and f"Partition {rerated.month}" in detail, detail
    assert "Asset checks4 / 4 Passed" in node, node
    for check in sorted(checks):
        # The re-rated month passed again, the others keep what the range run verified of them.
        counts = check_partition_counts(page, rerated.url, asset, check)
        assert counts == every_month_passed(len(rerated.months)), (check, counts)
    executions = graphql(
        rerated.url,
        """query ($key: AssetKeyInput!) { assetCheckExecutions(assetKey: $key, checkName: "schema", limit: 10) {
        partition evaluation { success targetMaterialization { runId } } } }""",
        {"key": {"path": asset.split("/")}},
    )["assetCheckExecutions"]
    latest = executions[0]
    assert latest["partition"] == rerated.month and latest["evaluation"]["success"]
    # It verified the month's new list: the run of one month's materialization, not the range run's.
    runs = graphql(rerated.url, "{ runsOrError { ... on Runs { results { runId } } } }")["runsOrError"]["results"]
    assert latest["evaluation"]["targetMaterialization"]["runId"] == runs[0]["runId"]


@browser_test
@needs_chromium
def test_the_list_of_the_month_just_closed_reads_fresh(rated: SimpleNamespace, page) -> None:
    opened(page, f"{rated.url}/assets/actual/rating_list")
    page.get_by_text("Freshness policy").first.wait_for(timeout=30_000)
    page.wait_for_function("() => /Passing|Failing|Unknown/.test(document.body.innerText)", timeout=90_000)
    text = page.inner_text("body")
    assert "Deadline: At 11:59 PM UTC, on day 1 of the month" in text
    section = text[text.index("Freshness policy") :][:200]
    assert "Passing" in section, section


def test_the_freshness_policy_is_for_a_store_whose_months_reach_the_month_just_closed() -> None:
    """Dagster judges a freshness policy by the latest materialization, whatever its month: a store whose months stop
    before the month just closed (the demo) has no list due, so no policy that would read "Passing".
    """
    from datetime import UTC, datetime

    from assets.definitions import list_freshness
    from assets.partitions import monthly_partitions
    from pipeline.settings import Settings

    now = datetime(2026, 11, 28, 23, 47, tzinfo=UTC)
    settings = Settings(schedule_day=5)
    assert list_freshness(settings, monthly_partitions("2015-01", "2024-12"), now) is None
    assert list_freshness(settings, monthly_partitions("2026-01", "2026-09"), now) is None
    for partitions in (monthly_partitions("2026-01", "2026-10"), monthly_partitions("2015-01")):
        policy = list_freshness(settings, partitions, now)
        assert policy is not None and policy.deadline_cron == "59 23 5 * *", partitions
    # On the 1st the month just closed is the one before: its list is the one due.
    assert list_freshness(settings, monthly_partitions("2026-01", "2026-10"), datetime(2026, 11, 1, tzinfo=UTC))
    assert list_freshness(settings, monthly_partitions("2026-01", "2026-09"), datetime(2026, 11, 1, tzinfo=UTC)) is None
