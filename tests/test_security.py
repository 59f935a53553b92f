"""Security: credentials never reach events, logs, metadata or errors.

The UI listens on loopback; names cannot leave the store.
"""

import logging
import re
from pathlib import Path

import dagster as dg
import pytest

from pipeline.store.object_store import ObjectStore, safe_part
from tests.conftest import TINY_END, TINY_START
from tests.servers import BUCKET, FAKE_KEY_ID, FAKE_SECRET, copy_tree

ROOT = Path(__file__).resolve().parents[1]
SECRETS = (FAKE_KEY_ID, FAKE_SECRET)


def run_everything(root: str, raise_on_error: bool = True) -> tuple[dg.ExecuteInProcessResult, str]:
    """Materialize every asset of the tiny months into root; the result and everything the run recorded."""
    from assets.automation import range_tags
    from assets.definitions import build_defs
    from pipeline.scenarios.model import Scenario

    defs = build_defs(
        TINY_START, TINY_END, root=root, scenarios={"plain": Scenario(name="plain", rules="fide-historical")}
    )
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(
            [*defs.assets, *defs.asset_checks],
            resources=defs.resources,
            instance=instance,
            raise_on_error=raise_on_error,
            tags=range_tags(TINY_START, TINY_END),
        )
        return result, everything_recorded(result, instance)


def everything_recorded(result: dg.ExecuteInProcessResult, instance: dg.DagsterInstance) -> str:
    """Every event, log line, metadata value and error the run recorded, as one text."""
    entries = instance.all_logs(result.run_id)
    parts = [repr(entry) for entry in entries]
    parts += [entry.user_message for entry in entries]
    parts += [repr(event.event_specific_data) for event in result.all_events]
    parts += [repr(instance.get_run_by_id(result.run_id))]
    return "\n".join(parts)


def test_credentials_never_appear_in_events_logs_metadata_or_errors(
    s3_root: str, tiny_landing_zone: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture, monkeypatch
) -> None:
    caplog.set_level(logging.DEBUG, logger="dagster")
    caplog.set_level(logging.INFO)
    copy_tree(tiny_landing_zone, ObjectStore(s3_root), "raw")
    ok, recorded = run_everything(s3_root)
    assert ok.success
    assert "s3://" in recorded and "dagster/partition_row_count" in recorded  # the grep reads real content

    # And when things go wrong: a bucket that does not exist, then an endpoint nobody listens on.
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    failures = []
    for root in ("s3://no-such-bucket-ops7/prefix", s3_root):
        if root == s3_root:
            monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # discard port: connection refused
            import s3fs

            s3fs.S3FileSystem.clear_instance_cache()
        failed, recorded_failure = run_everything(root, raise_on_error=False)
        assert not failed.success
        failures.append(recorded_failure)
    assert any("Traceback" in text or "Error" in text for text in failures)  # the errors are in there

    captured = capfd.readouterr()
    haystack = "\n".join([recorded, *failures, caplog.text, captured.out, captured.err])
    for secret in SECRETS:
        assert secret not in haystack
    # Neither the secret nor its URL-encoded form (botocore signs with it but must never print it).
    assert FAKE_SECRET.replace("/", "%2F").replace("+", "%2B") not in haystack


def test_the_ui_listens_on_loopback_only() -> None:
    from assets.runtime.cli import add_dagster_commands
    from pipeline.cli.commands import build_parser

    makefile = (ROOT / "Makefile").read_text()
    ui_recipe = makefile.split("\nui:", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"ratings ui\b", ui_recipe) and "--host" not in ui_recipe  # the command's default host
    assert build_parser(add_dagster_commands).parse_args(["ui"]).host == "127.0.0.1"
    for path in (ROOT / "Makefile", ROOT / "README.md", ROOT / "docs" / "operations.md"):
        assert "0.0.0.0" not in path.read_text(), path


UNSAFE_PARTS = ["..", "../etc", "a/../../b", "..\\x", ".hidden", "~", "~root", "x\x00y", "%2e%2e", "sp ace", "", "/"]


@pytest.mark.parametrize("name", UNSAFE_PARTS)
def test_names_that_could_leave_the_store_are_refused(name: str, tmp_path: Path) -> None:
    stores = [ObjectStore(str(tmp_path / "store")), ObjectStore(f"s3://{BUCKET}/prefix")]  # no request is made
    for store in stores:
        if name in ("", "/"):
            # Empty parts vanish: the key stays at the root of the store, never above it.
            assert store.path("raw", name, "x.csv") == store.path("raw", "x.csv")
            continue
        with pytest.raises(ValueError, match="unsafe path component"):
            store.path("raw", name, "2024-01", "x.csv")
        with pytest.raises(ValueError, match="unsafe path component"):
            store.write_bytes(b"x", f"raw/{name}/x.csv")
    assert not any(p.name == "x.csv" for p in tmp_path.rglob("*"))
    with pytest.raises(ValueError):
        safe_part(name)


def test_dumps_with_odd_names_are_read_and_every_write_stays_under_the_prefix(
    s3_root: str, s3_server, tiny_landing_zone: Path
) -> None:
    store = ObjectStore(s3_root)
    copy_tree(tiny_landing_zone, store, "raw")
    # Names a federation might upload: encoded dots and slashes, spaces, brackets. Read, never followed.
    odd = {
        "raw/GER/2024-01/..%2F..%2Fescape.csv": b"event_id,white_id\n",
        "raw/GER/2024-01/Open A (final).csv": b"garbage line\nmore garbage\n",
    }
    for key, data in odd.items():
        store.fs.pipe_file(f"{store.base}/{key}", data)
    client = s3_server._client()

    def bucket_keys() -> set[str]:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        return {item["Key"] for page in pages for item in page.get("Contents", [])}

    before = bucket_keys()
    result, _ = run_everything(s3_root)
    assert result.success
    prefix = s3_root.split("/", 3)[3] + "/"
    new = bucket_keys() - before
    assert new and all(key.startswith(prefix) and ".." not in key.split("/") for key in new)
    quarantined = ObjectStore(s3_root).read_parquet("quarantine/2024-01.parquet")
    assert "GER/2024-01/Open A (final).csv" in set(quarantined["source_file"])


@pytest.mark.parametrize("root", ["s3://someuser@bucket/prefix", "s3://someuser:hunter2@bucket/prefix"])
def test_store_urls_with_a_user_part_are_refused_without_echoing_it(root: str) -> None:
    with pytest.raises(ValueError) as refused:
        ObjectStore(root)
    assert "someuser" not in str(refused.value) and "hunter2" not in str(refused.value)
    assert "must not contain credentials" in str(refused.value)
