"""Proves a refactor kept behaviour: runs `ratings run` at two revisions on one store and compares every output byte.

    python -m tests.same_outputs --base REV [--head REV] [--players N] [--from YYYY-MM] [--to YYYY-MM]

Generates a small federation once, rates a copy of it with the code of each revision (a `git worktree`
of it, imported ahead of the installed project), then lists every file under the two stores outside
`raw/` that is missing on one side or differs in its bytes, bar Parquet tables that differ only in the code
version their footer records (counted apart). Exit status 0 when every output is otherwise identical.
`--head` defaults to the working tree, so uncommitted changes are compared too.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def checkout(revision: str | None, into: Path) -> Path:
    """The source tree of `revision` (a detached worktree), or the working tree itself for None."""
    if revision is None:
        return REPO
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--force", str(into), revision], check=True)
    return into


def rate(source: Path, store: Path, first: str, last: str, scenarios: str | None) -> None:
    """`ratings run` over `store` with the code in `source`, in a fresh Dagster instance."""
    environment = {**os.environ, "PYTHONPATH": str(source), "DAGSTER_DISABLE_TELEMETRY": "1"}
    environment.pop("RATINGS_SCENARIOS", None)
    command = [sys.executable, "-m", "assets", "run"]
    command += ["--store", str(store), "--from", first, "--to", last, "--dagster-home", str(store.parent / "home")]
    command += ["--scenarios", scenarios] if scenarios else []
    done = subprocess.run(command, cwd=source, env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ratings run failed with the code of {source}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def outputs(store: Path) -> set[str]:
    return {str(p.relative_to(store)) for p in store.rglob("*") if p.is_file() and p.parts[len(store.parts)] != "raw"}


def same_but_code_version(base: Path, head: Path) -> bool:
    """Two Parquet tables holding the same data and footer but for the code version it records (CODE_VERSION_FOOTER,
    which changes with any edit of the code that makes the table, whether or not its output changes).
    """
    import polars as pl
    import pyarrow.parquet as pq

    from pipeline.store.monthly import CODE_VERSION_FOOTER

    def footer(path: Path) -> dict[bytes, bytes]:
        metadata = pq.read_metadata(path).metadata or {}
        return {key: value for key, value in metadata.items() if key != CODE_VERSION_FOOTER.encode()}

    return footer(base) == footer(head) and pl.read_parquet(base).equals(pl.read_parquet(head), null_equal=True)


def differences(base: Path, head: Path) -> tuple[list[str], int]:
    """What differs between the two stores' outputs, and how many Parquet tables differ by their code version alone."""
    base_files, head_files = outputs(base), outputs(head)
    found = [f"only at base: {name}" for name in sorted(base_files - head_files)]
    found += [f"only at head: {name}" for name in sorted(head_files - base_files)]
    versions_only = 0
    for name in sorted(base_files & head_files):
        if filecmp.cmp(base / name, head / name, shallow=False):
            continue
        if name.endswith(".parquet") and same_but_code_version(base / name, head / name):
            versions_only += 1
        else:
            found.append(f"differs: {name}")
    return found, versions_only


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision before the change (e.g. main~3)")
    parser.add_argument("--head", help="the revision after it (default: the working tree)")
    parser.add_argument("--players", type=int, default=3000)
    parser.add_argument("--from", dest="first", default="2023-07")
    parser.add_argument("--to", dest="last", default="2024-04")
    parser.add_argument("--scenarios", help="a scenarios file both revisions read (default: each its own)")
    args = parser.parse_args(argv)

    from pipeline.generator import generate

    work = Path(tempfile.mkdtemp(prefix="same-outputs-"))
    try:
        generate(str(work / "landing"), seed=7, players=args.players, start=args.first, end=args.last)
        stores = {}
        for side, revision in (("base", args.base), ("head", args.head)):
            source = checkout(revision, work / f"{side}-source")
            store = work / side / "store"
            shutil.copytree(work / "landing", store)
            rate(source, store, args.first, args.last, args.scenarios and str(Path(args.scenarios).resolve()))
            stores[side] = store
        found, versions_only = differences(stores["base"], stores["head"])
        compared = len(outputs(stores["base"]))
        for line in found:
            print(line)
        print(f"{compared} output files compared: {'identical' if not found else f'{len(found)} differences'}")
        if versions_only:
            print(f"({versions_only} Parquet tables: the same data, only the code version they record differs)")
        return 1 if found else 0
    finally:
        for side in ("base", "head"):
            if (work / f"{side}-source").exists():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(work / f"{side}-source")])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
