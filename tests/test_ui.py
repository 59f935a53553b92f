"""The Dagster UI for real: the webserver over a small materialized data set, its GraphQL API, and Chromium.

The webserver listens on 127.0.0.1.
"""

import os
import subprocess
from pathlib import Path

import pytest

from tests.graph import graph_of
from tests.screenshots import CHROMIUM, free_port, graphql, start_ui, stop_ui, ui_screenshots

MONTHS = ["2024-01", "2024-02", "2024-03"]


@pytest.fixture(scope="module")
def webserver(tmp_path_factory: pytest.TempPathFactory):
    """Demo data for three months materialized into a persistent instance, then the webserver over it."""
    from assets.runtime.runs import run_demo
    from pipeline.generator import generate

    base = tmp_path_factory.mktemp("ui")
    store, home = base / "store", base / "home"
    generate(str(store), seed=11, players=400, start=MONTHS[0], end=MONTHS[-1])
    summary = run_demo(str(store), dagster_home=str(home), out=open(os.devnull, "w"))
    assert summary["success"]

    port = free_port()
    server = start_ui(str(store), str(home), port)
    yield f"http://127.0.0.1:{port}", port
    stop_ui(server)


def test_webserver_listens_on_loopback_only(webserver):
    _, port = webserver
    listening = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True).stdout
    if not listening.strip():
        pytest.skip("ss cannot list sockets here")
    assert all(line.split()[3].startswith("127.0.0.1:") for line in listening.strip().splitlines()), listening


def test_graphql_asset_graph_is_the_definitions_graph(webserver):
    from assets.definitions import build_defs

    url, _ = webserver
    data = graphql(url, "{ assetNodes { assetKey { path } groupName dependencyKeys { path } } }")
    served = {
        "/".join(node["assetKey"]["path"]): {
            "group": node["groupName"],
            "deps": sorted("/".join(d["path"]) for d in node["dependencyKeys"]),
        }
        for node in data["assetNodes"]
    }
    expected = graph_of(build_defs(MONTHS[0], MONTHS[-1]))["assets"]
    assert served == {key: {"group": node["group"], "deps": node["deps"]} for key, node in expected.items()}


def test_after_a_range_run_every_month_shows_its_checks_passed_and_the_run_is_reexecutable(webserver):
    url, _ = webserver
    runs = graphql(url, "{ runsOrError { ... on Runs { results { pipelineName status } } } }")["runsOrError"]["results"]
    # The named job (Re-execute works): the months, then the last month's readable lists with the comparison.
    assert runs == [{"pipelineName": "all_months", "status": "SUCCESS"}] * 2
    query = """query ($key: AssetKeyInput!, $check: String!) {
        assetCheckExecutions(assetKey: $key, checkName: $check, limit: 50) {
            status partition evaluation { success } } }"""
    for key, check in (("games", "reconciliation"), ("actual/rating_list", "list_continuity"), ("raw_games", "schema")):
        executions = graphql(url, query, {"key": {"path": key.split("/")}, "check": check})["assetCheckExecutions"]
        by_month = {e["partition"]: (e["status"], e["evaluation"]["success"]) for e in executions if e["partition"]}
        assert by_month == {month: ("SUCCEEDED", True) for month in MONTHS}, (key, check)
    stats = graphql(
        url,
        """{ assetNodes(assetKeys: [{path: ["actual", "rating_list"]}, {path: ["games"]}]) {
        partitionStats { numMaterialized numPartitions numFailed } } }""",
    )["assetNodes"]
    # The UI shows exactly the store's months: none missing, none extra.
    assert [node["partitionStats"] for node in stats] == [
        {"numMaterialized": 3, "numPartitions": 3, "numFailed": 0}
    ] * 2
    # Which months have readable lists: the published lists' partitions, the last month's only after a run.
    published = graphql(
        url,
        """{ assetNodes(assetKeys: [{path: ["actual", "published_list"]}]) {
        partitionStats { numMaterialized numPartitions } } }""",
    )["assetNodes"]
    assert [node["partitionStats"] for node in published] == [{"numMaterialized": 1, "numPartitions": 3}]


def test_graphql_one_materialization_per_month(webserver):
    url, _ = webserver
    query = """query ($key: AssetKeyInput!) { assetOrError(assetKey: $key) { ... on Asset {
        assetMaterializations(limit: 100) { partition } } } }"""
    for key in (
        "raw_games",
        "games",
        "quarantine",
        "actual/rating_list",
        "sonas_2017/rating_list",
        "elo_480/crosstable",
    ):
        data = graphql(url, query, {"key": {"path": key.split("/")}})
        partitions = sorted(m["partition"] for m in data["assetOrError"]["assetMaterializations"])
        assert partitions == MONTHS, key


def test_chromium_shows_the_asset_graph_and_a_partitioned_asset(webserver, tmp_path: Path):
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (Debian package 'chromium'; `make test` installs it where it can)")
    url, _ = webserver
    # The README's pictures come from a full demo (python -m tests.screenshots); these prove the pages render.
    for png in ui_screenshots(url, tmp_path, MONTHS[-1]):
        assert png.stat().st_size > 20_000, png
        import matplotlib.image

        pixels = matplotlib.image.imread(str(png))
        assert len({tuple(p) for p in pixels.reshape(-1, pixels.shape[-1])[::97]}) > 20, f"{png} looks blank"


def test_the_list_alone_opens_a_single_run_backfill_and_claims_no_freshness_for_old_months(webserver):
    """Materialize on `actual/rating_list`: no other table pulled in, one policy, one run. Its months are 2024's, long
    before the month just closed: no freshness policy reads "Passing" on lists that old (tests/test_ui_checks.py has
    the store whose months reach the month just closed).
    """
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (Debian package 'chromium'; `make test` installs it where it can)")
    from playwright.sync_api import sync_playwright

    from tests.screenshots import CHROMIUM_ARGS, dismiss_community_dialog

    url, _ = webserver
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{url}/assets/actual/rating_list", timeout=60_000)
        page.get_by_text("Compute details").first.wait_for(timeout=30_000)
        dismiss_community_dialog(page)
        page.wait_for_timeout(2_000)
        overview = page.inner_text("body")
        page.get_by_role("button", name="Materialize").first.click()
        page.get_by_text("Launch runs to materialize actual / rating_list").wait_for(timeout=30_000)
        dialog = page.inner_text("body")
        browser.close()
    assert "Freshness policy" not in overview and "Passing" not in overview
    assert "Additional assets will be materialized" not in dialog  # rated_games is not pulled in
    assert "Backfills all partitions in a single run." in dialog
    assert "varying backfill policies" not in dialog
