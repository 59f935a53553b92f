"""The README's pictures, taken in Chromium from a materialized store: the Dagster UI and the report pages.

    make run && .venv/bin/python -m tests.screenshots [--store data] [--dagster-home .dagster_home] [--out docs/img]

The UI test (tests/test_ui.py) takes the same UI pictures of its own small store, into a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
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


def ui_screenshots(url: str, out: Path, month: str, group: str = "sonas_2017") -> list[Path]:
    """The asset graph, and `actual/rating_list` with `month` selected in its Partitions tab."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    graph_png, partitions_png = (out / name for name in UI_PICTURES)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{url}/asset-groups", timeout=60_000)
        page.get_by_text(group).first.wait_for(timeout=30_000)
        dismiss_community_dialog(page)
        page.wait_for_function("() => !document.body.innerText.includes('fetching statuses')", timeout=30_000)
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
        pictures = ui_screenshots(f"http://127.0.0.1:{port}", out, month)
    finally:
        if server is not None:
            stop_ui(server)
    pictures += report_screenshots(store, out, str(int(month[:4]) - 1) if month.endswith("-01") else month[:4])
    for picture in pictures:
        print(f"{picture} ({picture.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
