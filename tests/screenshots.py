"""The README's pictures, taken in Chromium from a materialized store: the Dagster UI and the report pages.

    make run && .venv/bin/python -m tests.screenshots [--store data] [--dagster-home .dagster_home] [--out docs/img]

The UI test (tests/test_ui.py) takes the same UI pictures of its own small store, into a temporary folder. The
asset graph is taken only once the lineage has drawn (no "Cycle detected", every group a node), and on a full demo
the script also reads a check's partition bar: every month passed, none missing or skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import weakref
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
UI_PICTURES = ("asset-graph.png", "rating-list-partitions.png")
# Checks whose partition bar the script reads on a full demo: one of the shared tables, one of a chain.
DEMO_CHECKS = (
    ("games", "reconciliation"),
    ("actual/rating_list", "list_continuity"),
    ("glicko2/system_state", "schema"),
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_ui(store: str, home: str, port: int) -> subprocess.Popen:
    """`ratings ui` exactly as a user starts it (no RATINGS_* variable set by hand); returns once it answers."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("RATINGS_")}
    server = subprocess.Popen(
        [sys.executable, "-m", "assets", "ui", "--store", store, "--dagster-home", home, "--port", str(port)],
        env=env,
        cwd=str(REPO),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2):
                return server
        except OSError:
            if server.poll() is not None:
                raise RuntimeError(f"dagster-webserver exited: {server.stderr.read().decode()[-2000:]}") from None
            time.sleep(0.5)
    stop_ui(server)
    raise RuntimeError("dagster-webserver did not answer within 90 s")


def stop_ui(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)


def dismiss_community_dialog(page) -> None:
    """Dagster shows a one-time 'Join the community' dialog over new pages; skip it when it comes."""
    skip = page.get_by_role("button", name="Skip")
    try:
        skip.wait_for(state="visible", timeout=6_000)
    except Exception:  # noqa: BLE001 - no dialog this time
        return
    skip.click()
    skip.wait_for(state="hidden", timeout=10_000)


def graphql(url: str, query: str, variables: dict | None = None) -> dict:
    """The webserver's GraphQL answer (its `data`); an error answer fails."""
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{url}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        payload = json.loads(response.read())
    assert "errors" not in payload, payload["errors"]
    return payload["data"]


def asset_groups(url: str) -> dict[str, list[str]]:
    """Each asset group the webserver serves -> its assets' keys ('a/b')."""
    nodes = graphql(url, "{ assetNodes { assetKey { path } groupName } }")["assetNodes"]
    groups: dict[str, list[str]] = {}
    for node in nodes:
        groups.setdefault(node["groupName"], []).append("/".join(node["assetKey"]["path"]))
    return {name: sorted(keys) for name, keys in sorted(groups.items())}


def group_path(url: str, group: str) -> str:
    """The UI's page of an asset group: /locations/<code location>/asset-groups/<group>."""
    query = "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }"
    [repository] = graphql(url, query)["repositoriesOrError"]["nodes"]
    name, location = repository["name"], repository["location"]["name"]
    address = location if name == "__repository__" else f"{name}@{location}"
    return f"/locations/{address}/asset-groups/{group}"


class GraphNotDrawn(AssertionError):
    """A lineage page that drew no graph: Dagster's "Cycle detected" screen, an empty graph, or nothing in time."""


def drawn_nodes(page, timeout: int = 60_000) -> dict[str, str]:
    """The nodes the lineage graph on the page drew: each node's name (an asset, an asset of another group linked to,
    a collapsed group) -> its text (an asset's: its status tags, name, 'Latest event...', 'Asset checks 4 / 4 Passed';
    the texts of the nodes sharing a name, joined by ' | ').
    GraphNotDrawn when Dagster shows its cycle error instead, or draws nothing.
    """
    drawn_or_refused = "document.querySelector('svg foreignObject')"
    drawn_or_refused += " || /Cycle detected|Empty graph/.test(document.body.innerText)"
    page.wait_for_function(f"() => {drawn_or_refused}", timeout=timeout)
    page.wait_for_function("() => !document.body.innerText.includes('fetching statuses')", timeout=timeout)
    text = page.inner_text("body")
    for error in ("Cycle detected", "Empty graph"):
        if error in text:
            raise GraphNotDrawn(f"{page.url}: {error}: {' '.join(text.split())[:300]}")
    # A node names itself in its first tooltip (an asset, a group) or title (a link to another group's asset).
    named = """nodes => nodes.map(node => {
        const label = node.querySelector('[data-tooltip], [title]');
        const name = label ? (label.getAttribute('data-tooltip') || label.getAttribute('title')) : '';
        return [name, (node.textContent || '').trim()];
    })"""
    # One name, several nodes: a group's own asset and another group's asset of the same name linked to it (a rapid
    # list's rating_list beside the standard list's): their texts together, so the own node's is never lost.
    nodes: dict[str, str] = {}
    for name, text in page.eval_on_selector_all("svg foreignObject", named):
        nodes[name] = f"{nodes[name]} | {text}" if name in nodes else text
    return nodes


def require_nodes(nodes: dict[str, str], names: list[str], where: str, drawn_as: str = "") -> None:
    """GraphNotDrawn unless every name in `names` is a node among the drawn `nodes` (whose text has `drawn_as`)."""
    missing = [name for name in names if name not in nodes or drawn_as not in nodes[name]]
    if missing:
        raise GraphNotDrawn(f"{where}: no node {drawn_as!r} for {missing} among {len(nodes)} drawn: {sorted(nodes)}")


# The statuses a check's partition bar counts, as the UI writes them: "Passed (120)".
CHECK_STATUSES = ("Execution Failed", "Failed", "In Progress", "Missing", "Skipped", "Passed")


def check_partition_counts(page, url: str, asset: str, check: str) -> dict[str, int]:
    """The counts the partition bar of `asset`'s check `check` shows (Checks tab, the check, its Partitions tab)."""
    visit(page, f"{url}/assets/{asset}?view=checks")
    page.get_by_text(check, exact=True).first.click()
    page.get_by_role("tab", name="Partitions").last.click()
    page.get_by_text("Passed (").first.wait_for(timeout=30_000)
    page.wait_for_timeout(1_000)  # the counts fill in after the bar
    pattern = re.compile(rf"^({'|'.join(CHECK_STATUSES)}) \((\d+)\)$")
    lines = (line.strip() for line in page.inner_text("body").splitlines())
    return {match[1]: int(match[2]) for line in lines if (match := pattern.match(line))}


_DISMISSED: weakref.WeakSet = weakref.WeakSet()  # the pages past the dialog


def visit(page, url: str) -> None:
    """Open `url` in `page`, skipping the community dialog on the page's first visit (Dagster shows it once)."""
    page.goto(url, timeout=60_000)
    if page not in _DISMISSED:
        dismiss_community_dialog(page)
        _DISMISSED.add(page)


def ui_screenshots(url: str, out: Path, month: str, group: str = "sonas_2017") -> list[Path]:
    """The asset graph, once it has drawn every group, and `actual/rating_list` with `month` selected in its Partitions
    tab. GraphNotDrawn when the lineage is Dagster's cycle error (or draws no group).
    """
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    graph_png, partitions_png = (out / name for name in UI_PICTURES)
    groups = list(asset_groups(url))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # Tall enough for every group of the global lineage (fifteen with the national scenarios): Dagster draws only
        # the nodes in view.
        page = browser.new_page(viewport={"width": 1600, "height": 1600})
        page.goto(f"{url}/asset-groups", timeout=60_000)
        page.get_by_text(group).first.wait_for(timeout=30_000)
        dismiss_community_dialog(page)
        require_nodes(drawn_nodes(page), groups, "the global lineage")
        page.wait_for_timeout(1_500)
        page.screenshot(path=str(graph_png))
        page.goto(f"{url}/assets/actual/rating_list?view=partitions", timeout=60_000)
        page.get_by_text(month).first.wait_for(timeout=30_000)
        dismiss_community_dialog(page)
        page.get_by_text(month).first.click()
        page.get_by_text("rated_players").first.wait_for(timeout=30_000)
        page.wait_for_timeout(1_000)
        page.screenshot(path=str(partitions_png))
        browser.close()
    return [graph_png, partitions_png]


def verify_ui(url: str, months: int, checks: tuple[tuple[str, str], ...] = DEMO_CHECKS) -> list[str]:
    """What a user reads in the UI of a store rated month by month: every group's lineage draws, and each of `checks`
    (asset, check) shows all `months` passed in its partition bar. Lines saying so; AssertionError otherwise.
    """
    from playwright.sync_api import sync_playwright

    said = []
    groups = asset_groups(url)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 4400, "height": 4800})  # every node of a group in view
        for group, keys in groups.items():
            visit(page, f"{url}{group_path(url, group)}")
            nodes = drawn_nodes(page)
            require_nodes(nodes, [key.rsplit("/", 1)[-1] for key in keys], f"group {group}", "Latest event")
            said.append(f"group {group}: lineage drawn, {len(keys)} assets ({len(nodes)} nodes)")
        for asset, check in checks:
            counts = check_partition_counts(page, url, asset, check)
            expected = {status: 0 for status in CHECK_STATUSES} | {"Passed": months}
            assert counts == expected, f"{asset} {check}: the partition bar reads {counts}, not {expected}"
            said.append(f"{asset} {check}: Passed ({months}), none missing, skipped or failed")
        browser.close()
    return said


def report_screenshots(store: Path, out: Path, year: str) -> list[Path]:
    """The `actual` crosstable page of `year` as Chromium shows it, and the latest score-curve chart as written."""
    from playwright.sync_api import sync_playwright

    page_file = store / "reports" / "actual" / "crosstable" / f"{year}.html"
    curves = sorted((store / "reports" / "actual" / "score-curves").glob("*.png"))
    if not page_file.is_file() or not curves:
        raise FileNotFoundError(f"no crosstable page for {year} or no score curves under {store / 'reports'}")
    crosstable_png, curves_png = out / "crosstable-example.png", out / "score-curves-example.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(page_file.resolve().as_uri())
        page.screenshot(path=str(crosstable_png), full_page=False)
        browser.close()
    shutil.copyfile(curves[-1], curves_png)
    return [crosstable_png, curves_png]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="data")
    parser.add_argument("--dagster-home", default=".dagster_home")
    parser.add_argument("--out", default=str(REPO / "docs" / "img"))
    parser.add_argument("--month", help="the month shown in the Partitions tab (default: the store's last)")
    args = parser.parse_args(argv)
    if CHROMIUM is None:
        raise SystemExit("Chromium is not installed (Debian package 'chromium')")
    store, out = Path(args.store).resolve(), Path(args.out)
    months = sorted(p.stem for p in (store / "actual" / "rating_list").glob("*.parquet"))
    if not months:
        raise SystemExit(f"{store} holds no actual/rating_list month: run `make run` first")
    month = args.month or months[-1]
    server, port = None, free_port()
    try:
        server = start_ui(str(store), str(Path(args.dagster_home).resolve()), port)
        url = f"http://127.0.0.1:{port}"
        pictures = ui_screenshots(url, out, month)
        for line in verify_ui(url, len(months)):
            print(line)
    finally:
        if server is not None:
            stop_ui(server)
    pictures += report_screenshots(store, out, str(int(month[:4]) - 1) if month.endswith("-01") else month[:4])
    for picture in pictures:
        print(f"{picture} ({picture.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
