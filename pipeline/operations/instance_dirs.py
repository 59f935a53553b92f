"""Which Dagster instance a store's runs go to: `--dagster-home`, else $DAGSTER_HOME, else the store's own."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pipeline.settings import Settings
from pipeline.text import CommandLines

if TYPE_CHECKING:
    from pipeline.store.object_store import ObjectStore

# A local store's own Dagster instance: a folder in the store's root, beside raw/ and the tables. A dot name, so
# no table, report or landing-zone key can be it (pipeline.store.object_store.safe_part refuses dot names), and
# inventories, which read only raw/, never see it.
INSTANCE_FOLDER = ".dagster"
# An object store's own instance: a local folder per store, under $XDG_STATE_HOME (default ~/.local/state).
STATE_FOLDER = ("chess-ratings", "instances")
# Where the instance directory came from, as the commands say it.
FROM_OPTION, FROM_ENVIRONMENT, FROM_STORE = "given by --dagster-home", "from $DAGSTER_HOME", "the store's own"


def store_instance_dir(store_url: str, environ: Mapping[str, str] | None = None) -> str:
    """The directory of a store's own Dagster instance: `<store>/.dagster` for a local store (`store_url` is its
    absolute path), else a local folder named after the store's URL (redacted, never credentials) and S3 endpoint:
    `$XDG_STATE_HOME/chess-ratings/instances/<scheme>-<bucket>-<prefix>-<digest>`.

    An object store's instance cannot live in the bucket (SQLite needs a local file); keying it by URL and endpoint
    keeps two stores apart, and the same store finds the same instance from any working directory.
    """
    environ = os.environ if environ is None else environ
    if "://" not in store_url:
        return os.path.join(os.path.abspath(store_url), INSTANCE_FOLDER)
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL") or ""
    from pipeline.store.object_store import redact_url  # not at import: the store's libraries load slowly

    digest = hashlib.sha256(f"{redact_url(store_url)}\n{redact_url(endpoint)}".encode()).hexdigest()[:10]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", redact_url(store_url).replace("://", "-")).strip("-.")[:60]
    state = environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, *STATE_FOLDER, f"{readable}-{digest}")


def instance_dir(dagster_home: str | None, store_url: str, environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(directory, where it came from) of the Dagster instance a command over the store at `store_url` uses.

    In order: `--dagster-home`; else $DAGSTER_HOME (Dagster's own variable: the daemon, `dg dev` and a deployment
    share the instance it names; the Makefile sets it to ./.dagster_home for `make run` and `make ui`); else the
    store's own (store_instance_dir), so that two stores never share an instance unless asked to.
    """
    environ = os.environ if environ is None else environ
    if dagster_home:
        return os.path.abspath(dagster_home), FROM_OPTION
    if environ.get("DAGSTER_HOME"):
        return os.path.abspath(environ["DAGSTER_HOME"]), FROM_ENVIRONMENT
    return store_instance_dir(store_url, environ), FROM_STORE


def command_lines(where: str, scenarios_file: str | None = None, dagster_home: str | None = None) -> CommandLines:
    """The CommandLines of a command over the store at `where` run with `scenarios_file` (named absolute: a command
    printed into the UI's metadata, or for `dg dev`, which runs in the project's folder, is not run where this one was)
    and `dagster_home` (--dagster-home, else $DAGSTER_HOME: named when it is not the store's own instance).
    """
    home = instance_dir(dagster_home, where)[0]
    scenarios = os.path.abspath(scenarios_file) if scenarios_file else None
    return CommandLines(where, scenarios, None if home == store_instance_dir(where) else home)


def location_commands(store: ObjectStore) -> CommandLines:
    """The CommandLines of what a Dagster run (the UI's, the schedule's, the sensor's) prints over `store`: with the
    scenarios file (RATINGS_SCENARIOS) and the instance ($DAGSTER_HOME) its code location runs with.
    """
    scenarios_file = Settings.one_from_env("scenarios")
    from pipeline.store.object_store import redact_url  # not at import: the store's libraries load slowly

    return command_lines(redact_url(store.url()), scenarios_file if isinstance(scenarios_file, str) else None)
