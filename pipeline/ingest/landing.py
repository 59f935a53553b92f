"""The landing zone's inventory: every entry under raw/ placed, misplaced or refused, and its versions per month."""

from __future__ import annotations

import calendar
import datetime
import hashlib
import os
import re
import stat
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from pipeline.ingest.federations import FEDERATION_CODE
from pipeline.months import MONTH_PATTERN, month_of
from pipeline.settings import Settings
from pipeline.store.object_store import ObjectStore
from pipeline.text import escape_text

# The landing zone as the UI describes it (assets/ingest.py), kept beside the layout it describes.
LANDING_DESCRIPTION = """The federations' raw dumps as received: `raw/<federation>/<YYYY-MM>/<file>` in the object \
store. The month folder is the rating period the dumps were reported for (its list is FIDE's list of the 1st of the \
next month): a tournament is filed under the month of the first list whose closing date it ended by, or up to the \
third list after it ended (FIDE's calendar, docs/rules.md).

Never modified by the pipeline. Observing it records one data version per month, a digest of the
month's files' keys, sizes and modification times (ETags on S3), not of their bytes: a late
correction to an old month (or the same bytes with a new modification time) marks that month's
raw_games stale in the UI.
Only raw_games: Dagster does not mark the tables and months rated after it stale. The landing-zone
sensor (RATINGS_AUTOMATION=on) re-rates from that month to the last one; without it, rate that
range (`ratings run --from <month>`, or a backfill from the UI)."""

RAW = "raw"
REGISTRY_FOLDER = "players"
# A federation folder name: what safe_part accepts (a letter or digit first; letters, digits, . _ = + -).
FEDERATION_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]*$")
# Entry kinds: a dump of a month, a registry or seed-list file, and entries that are not read.
DUMP, REGISTRY, MISPLACED, NOT_A_FILE = "dump", "registry", "misplaced", "not_a_file"

_MONTH_NAMES = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTH_NAMES.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})
_NUMERIC_MONTH = re.compile(r"^(\d{4})[-_. ]?(\d{1,2})$")
_NAMED_MONTH = re.compile(r"^(?:([A-Za-z]+)[-_. ]?(\d{4})|(\d{4})[-_. ]?([A-Za-z]+))$")


@dataclass(frozen=True)
class LandingEntry:
    """One entry under raw/: where it is, what it is, and for entries that are not read, why and where they belong.

    `month` is the rating period the entry is accounted in: its folder's month, or for a month folder
    with an unusual name ('2024-1', 'Jan2024') the month that name means. Misplaced entries without any
    month (a file directly under raw/ or raw/<FED>/) have none: the landing-zone check reports them.
    """

    key: str
    kind: str
    federation: str = ""
    month: str | None = None
    problem: str = ""
    stamp: str = ""


def lenient_month(name: str) -> str | None:
    """The YYYY-MM an unusual month folder name means ('2024-1', '2024_02', '202402', 'Jan2024', '2024-January'), else
    None.
    """
    numeric = _NUMERIC_MONTH.match(name.strip())
    if numeric:
        year, month = int(numeric.group(1)), int(numeric.group(2))
    else:
        named = _NAMED_MONTH.match(name.strip())
        if not named:
            return None
        word, year_text = (named.group(1), named.group(2)) if named.group(1) else (named.group(4), named.group(3))
        month, year = _MONTH_NAMES.get(word.lower(), 0), int(year_text)
    return f"{year:04d}-{month:02d}" if 1 <= month <= 12 and 1900 <= year <= 2999 else None


def month_bounds(today: datetime.date | None = None) -> tuple[str, str]:
    """(earliest, latest) month a dump's folder may name: RATINGS_EARLIEST_MONTH, and the current month (UTC).

    Games cannot have been played in a month that has not begun; the current month itself may
    already hold the dumps of its first events.
    """
    earliest = Settings.one_from_env("earliest_month")
    assert isinstance(earliest, str)  # a validated 'YYYY-MM'
    now = today or datetime.datetime.now(datetime.UTC).date()
    return earliest, month_of(now)


def _out_of_bounds(month: str, bounds: tuple[str, str]) -> str | None:
    """Why a month folder names no month to rate (before the earliest month, or in the future), else None."""
    earliest, latest = bounds
    if month < earliest:
        return (
            f"month folder {month} is before {earliest}, the earliest month rated (RATINGS_EARLIEST_MONTH): "
            f"a typo? move the file to the month its games were played"
        )
    if month > latest:
        return (
            f"month folder {month} is in the future (today is in {latest}): move the file to the month its games "
            f"were played"
        )
    return None


#: What a FIFO, device or socket is called where it is not read (not_a_file_problem).
SPECIAL_FILE = "a special file (FIFO, device or socket)"


def not_a_file_problem(what: str) -> str:
    """Why an entry that is no regular file (`what`: 'a symbolic link', SPECIAL_FILE) is not read: a run's NOT_A_FILE
    record and `ratings validate` say it alike.
    """
    return f"{what} is not read (only regular files are): copy the file itself into the landing zone"


def classify(key: str, is_file: bool = True, what: str = "", bounds: tuple[str, str] | None = None) -> LandingEntry:
    """Place one key under raw/ ('raw/GER/2024-01/open.trf'); `what` names a non-file ('a symbolic link').

    `bounds` (default month_bounds()) are the earliest and latest month a dump's folder may name: one
    outside them is misplaced and accounted in no month, so a stray folder cannot add months to a run.
    """
    parts = key.split("/")[1:]
    bounds = bounds or month_bounds()
    if not is_file:
        month = (
            parts[1]
            if len(parts) >= 3 and MONTH_PATTERN.match(parts[1])
            else (lenient_month(parts[1]) if len(parts) >= 3 else None)
        )
        if month is not None and parts[0] != REGISTRY_FOLDER and _out_of_bounds(month, bounds):
            month = None
        return LandingEntry(
            key,
            NOT_A_FILE,
            parts[0] if len(parts) >= 2 else "",
            month,
            not_a_file_problem(what),
        )
    if len(parts) < 3:
        where = "raw/" if len(parts) == 1 else f"raw/{parts[0]}/"
        registry = len(parts) == 2 and parts[0].lower() == REGISTRY_FOLDER
        fed = "<FED>" if len(parts) == 1 or registry else _federation_target(parts[0])
        folder = REGISTRY_FOLDER if registry else fed
        return LandingEntry(
            key,
            MISPLACED,
            parts[0] if len(parts) == 2 else "",
            None,
            f"a file directly under {where} is not read: move it to raw/{folder}/<YYYY-MM>/",
        )
    federation, folder = parts[0], parts[1]
    month = folder if MONTH_PATTERN.match(folder) else lenient_month(folder)
    if federation != REGISTRY_FOLDER and federation.lower() == REGISTRY_FOLDER:
        return _registry_misnamed(key, federation, month, bounds)
    beyond = _out_of_bounds(month, bounds) if month is not None and federation != REGISTRY_FOLDER else None
    if beyond:
        return LandingEntry(key, MISPLACED, federation, None, f"{beyond}: not read")
    if month is None:
        return LandingEntry(
            key,
            MISPLACED,
            federation,
            None,
            f"folder {folder!r} is not a month: move the file to raw/{_federation_target(federation)}/<YYYY-MM>/",
        )
    if month != folder:
        return LandingEntry(
            key,
            MISPLACED,
            federation,
            month,
            f"folder {folder!r} is not written YYYY-MM: move the file to raw/{_federation_target(federation)}/{month}/",
        )
    if federation == REGISTRY_FOLDER:
        return LandingEntry(key, REGISTRY, "", month)
    if not FEDERATION_PATTERN.match(federation):
        return LandingEntry(
            key,
            MISPLACED,
            federation,
            month,
            f"federation folder {federation!r} is not a federation code (a letter or digit first, then "
            f"letters, digits, . _ = + -): move the file to raw/<FED>/{month}/",
        )
    return LandingEntry(key, DUMP, federation, month)


def _federation_target(folder: str) -> str:
    """The federation folder an advice moves a file to: `folder` itself, or <FED> where it is no federation folder's
    name ('..', '<img>'), which the advice must not repeat.
    """
    return folder if FEDERATION_PATTERN.match(folder) else "<FED>"


def _registry_misnamed(key: str, folder: str, month: str | None, bounds: tuple[str, str]) -> LandingEntry:
    """A file under raw/Players/ (the registry folder in another case, which a case-sensitive store tells apart): never
    read as a federation's games nor as the registry; accounted in its month, when that is one to rate, so that the run
    names it.
    """
    parts = key.split("/")
    rest = f"{month or '<YYYY-MM>'}/{parts[-1]}"
    if month is not None and _out_of_bounds(month, bounds):
        month = None
    return LandingEntry(
        key,
        MISPLACED,
        folder,
        month,
        f"folder raw/{folder}/ is not the player registry's folder, raw/{REGISTRY_FOLDER}/ (lower case): "
        f"not read; move the file to raw/{REGISTRY_FOLDER}/{rest}",
    )


# The listing of the run in progress in this process (store URL -> entries), while listing_of_the_run holds it.
_RUN_LISTING: dict[str, list[LandingEntry]] = {}


@contextmanager
def listing_of_the_run(store: ObjectStore, entries: list[LandingEntry]) -> Iterator[None]:
    """While held, inventory(store) answers from `entries`, the listing the run was planned on, instead of listing
    raw/ again: ingest, the registry and the layout check of the run's stages in this process see the files the plan
    counted and observed (a fide-scale landing zone is 90,000 files, half a CPU-second a listing). Worker processes
    list for themselves.
    """
    url = store.url()
    # By key, as inventory lists (sorted again in linear time): a folder's entries are then found by bisection.
    _RUN_LISTING[url] = sorted(entries, key=_key_of)
    try:
        yield
    finally:
        _RUN_LISTING.pop(url, None)


def run_in_progress(store: ObjectStore) -> bool:
    """Whether a run of `store` holds its listing in this process (listing_of_the_run), and with it the store's lock."""
    return store.url() in _RUN_LISTING


def inventory(
    store: ObjectStore, folder: str | None = None, listed: Callable[[int], None] | None = None
) -> list[LandingEntry]:
    """Every entry under raw/ (or only under raw/<folder>/), sorted by key: one listing, nothing opened, links and
    special files never followed; the run's listing while one is held (listing_of_the_run).

    `listed` is told how many entries are listed so far, after each folder of a local store (an object store's
    listing is one call: told once, at its end), so that a long listing can show progress.
    """
    below = (RAW,) if folder is None else (RAW, folder)
    planned = _RUN_LISTING.get(store.url())
    if planned is not None:
        # The keys under a folder are those from "<folder>/" up to "<folder>0" ("0" follows "/").
        prefix = "/".join(below) + "/"
        start = bisect_left(planned, prefix, key=_key_of)
        return planned[start : bisect_left(planned, prefix[:-1] + "0", lo=start, key=_key_of)]
    bounds = month_bounds()
    if store.is_local:
        return sorted(_local_entries(store, below, bounds, listed), key=lambda entry: entry.key)
    stamps = store.list_stamps(*below)
    if listed is not None:
        listed(len(stamps))
    return sorted(
        (_stamped(classify(key, bounds=bounds), stamp) for key, stamp in stamps.items()), key=lambda entry: entry.key
    )


def dump_bytes(entries: Sequence[LandingEntry], months: Sequence[str]) -> list[int]:
    """The bytes of each month's entries, in `months` order (from their stamps, 'size ...'; none: 0)."""
    sizes = dict.fromkeys(months, 0)
    for entry in entries:
        size = entry.stamp.split(" ", 1)[0]
        if entry.month in sizes and size.isdigit():
            sizes[entry.month] += int(size)
    return list(sizes.values())


def _stamped(entry: LandingEntry, stamp: str) -> LandingEntry:
    return LandingEntry(entry.key, entry.kind, entry.federation, entry.month, entry.problem, stamp)


def _local_entries(
    store: ObjectStore, below: tuple[str, ...], bounds: tuple[str, str], listed: Callable[[int], None] | None = None
) -> list[LandingEntry]:
    """os.scandir of the folder `below` names, without following links: a symlink (to a folder, outside the store,
    dangling) or a FIFO is an entry, not a path.
    """
    top = os.path.join(store.base, *below)
    if not os.path.isdir(top) or os.path.islink(top):
        return []
    entries: list[LandingEntry] = []
    pending = [top]
    while pending:
        folder = pending.pop()
        # The folder's key once, each entry's its name after it (a relpath per entry was most of a listing).
        under = os.path.relpath(folder, store.base).replace(os.sep, "/") + "/"
        with os.scandir(folder) as listing:
            for item in listing:
                key = under + item.name
                info = item.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    pending.append(item.path)
                elif stat.S_ISREG(info.st_mode):
                    entries.append(_stamped(classify(key, bounds=bounds), f"{info.st_size} {info.st_mtime_ns}"))
                else:
                    what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else SPECIAL_FILE
                    entries.append(classify(key, is_file=False, what=what, bounds=bounds))
        if listed is not None:
            listed(len(entries))
    return entries


def _key_of(entry: LandingEntry) -> str:
    return entry.key


# A federation folder's name is shown up to this many characters: a 250-letter name is a stray folder, not news.
_FOLDER_SHOWN = 40


def _shown(name: str) -> str:
    """A folder's name as a line shows it: escaped, a long one cut."""
    shown = escape_text(name)
    return shown[:_FOLDER_SHOWN] + ("..." if len(shown) > _FOLDER_SHOWN else "")


def _folder(name: str) -> str:
    return f"raw/{_shown(name)}/"


def federation_folder_problems(entries: Sequence[LandingEntry]) -> list[str]:
    """What is wrong with the names of the federation folders whose dumps are read: one not a federation code (three
    capital letters, FEDERATION_CODE) and two that differ only in case, each one line naming the folders.

    Such a folder is read as it is named, never upper-cased: its games count as reported by that name, which no
    scenario's `restrict: {reported_by: ...}` (a federation code) names, and a case-insensitive file system would
    make two of them one. Renaming is the landing zone owner's call, so the run and the definitions say it instead.
    """
    read = sorted({entry.federation for entry in entries if entry.kind == DUMP})
    lines = []
    for name in read:
        if not FEDERATION_CODE.match(name):
            target = f"raw/{name.upper()}/" if FEDERATION_CODE.match(name.upper()) else "raw/<FED>/ (its code)"
            lines.append(
                f"federation folder {_folder(name)} is not a federation code (three capital letters, as GER): its "
                f"dumps are read as reported by '{_shown(name)}', which no scenario's `reported_by` names; "
                f"move them to {target}"
            )
    by_case: dict[str, list[str]] = {}
    for name in read:
        by_case.setdefault(name.casefold(), []).append(name)
    for names in (names for names in by_case.values() if len(names) > 1):
        code = next((name for name in names if FEDERATION_CODE.match(name)), names[0].upper())
        target = f"raw/{code}/" if FEDERATION_CODE.match(code) else "one of them"
        lines.append(
            f"federation folders {', '.join(map(_folder, names))} differ only in case: read as {len(names)} "
            f"federations (one folder on a case-insensitive file system); move their files to {target}"
        )
    return lines


def refusal(entry: LandingEntry) -> str:
    """The parse_error of the record that stands for an entry that is not read: '<kind>: <problem>'."""
    return f"{entry.kind}: {entry.problem}"


def month_entries(entries: list[LandingEntry], month: str) -> list[LandingEntry]:
    """The entries accounted in `month` (the registry's excluded): dumps to read, and entries to quarantine."""
    return [entry for entry in entries if entry.month == month and entry.kind != REGISTRY]


def months_held(entries: list[LandingEntry]) -> list[str]:
    """Months with at least one dump or quarantined entry (the registry's months excluded), sorted."""
    return sorted({entry.month for entry in entries if entry.month is not None and entry.kind != REGISTRY})


def unplaced(entries: list[LandingEntry]) -> list[LandingEntry]:
    """Entries no month accounts for (files directly under raw/ or raw/<FED>/, folders that are no month)."""
    return [entry for entry in entries if entry.month is None]


# Hex digits of a landing-zone digest: the data versions the UI has recorded since the first release are this long.
DIGEST_LENGTH = 16


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()[:DIGEST_LENGTH]


@dataclass(frozen=True)
class LandingVersions:
    """Digests of the landing zone per month, from one inventory: what each month holds, and the registry.

    `dumps[M]` covers every entry accounted in M (dumps, and entries quarantined there), the registry
    excluded: it is the data version of the month's raw_games. `registry[M]` covers the files of
    raw/players/M/, which every month from M on reads.
    """

    dumps: dict[str, str]
    registry: dict[str, str]

    def rerate_fingerprints(self, first_month: str, last_month: str) -> dict[str, str]:
        """Month -> digest of everything whose change calls for re-rating from it, months first..last only.

        A month's dumps and the registry files of its folder; registry folders before `first_month`
        count in the first month (see landing_month). A re-rate from M covers every later month, so
        a registry change is seen by all the months that read it.
        """
        parts: dict[str, list[str]] = {}
        for month, digest in self.dumps.items():
            if first_month <= month <= last_month:
                parts.setdefault(month, []).append(f"dumps\t{digest}")
        for month, digest in self.registry.items():
            affected = max(month, first_month)
            if affected <= last_month:
                parts.setdefault(affected, []).append(f"registry {month}\t{digest}")
        return {month: _digest(lines) for month, lines in sorted(parts.items())}

    def registry_from(self, chain_start: str) -> dict[str, str]:
        """Month -> digest of the registry folders a chain starting at `chain_start` reads first in that month: the
        month's own folder, and at the chain's start every earlier folder too (see landing_month).
        """
        parts: dict[str, list[str]] = {}
        for month, digest in self.registry.items():
            parts.setdefault(max(month, chain_start), []).append(f"{month}\t{digest}")
        return {month: _digest(lines) for month, lines in sorted(parts.items())}


def landing_versions(store: ObjectStore, entries: list[LandingEntry] | None = None) -> LandingVersions:
    """The digests of every month's entries and registry files (keys, sizes and etags/mtimes), from one listing.

    `entries`: the store's inventory when the caller already listed it.
    """
    dumps: dict[str, list[str]] = {}
    registry: dict[str, list[str]] = {}
    for entry in inventory(store) if entries is None else entries:
        if entry.month is not None:
            (registry if entry.kind == REGISTRY else dumps).setdefault(entry.month, []).append(
                f"{entry.key}\t{entry.stamp}"
            )
    return LandingVersions(
        {month: _digest(lines) for month, lines in sorted(dumps.items())},
        {month: _digest(lines) for month, lines in sorted(registry.items())},
    )


def landing_month(key: str, first_month: str) -> str | None:
    """The first rating period a landing-zone file affects, or None for files no month accounts for.

    A file accounted in month M (a dump, or an entry quarantined there) affects M; a registry file in
    raw/players/<M>/ affects M and later (a month sees the players registered up to it), so one before
    the first partition affects the first. Dumps of months before the first partition are never ingested.
    """
    entry = classify(key)
    if entry.month is None:
        return None
    if entry.kind == REGISTRY:
        return max(entry.month, first_month)
    return entry.month if entry.month >= first_month else None
