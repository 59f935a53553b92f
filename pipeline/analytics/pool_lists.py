"""Pool health from published rating lists alone: entries, exits, rating changes by group, a stable cohort's drift."""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path

import polars as pl

from pipeline.formats.common import UnreadableDump, strip_compression
from pipeline.formats.decoding import MAX_DECOMPRESSED_BYTES, decompress
from pipeline.formats.fide_list import COMBINED, LAYOUTS, FideListFile, parse_fide_list, two_digit_birth_year
from pipeline.formats.table_files import InputFileError
from pipeline.months import month_index, parse_month
from pipeline.text import escape_text
from schemas.cohort_drift import CohortDrift
from schemas.pool_transitions import POOL_DIMENSIONS, PoolTransitions
from schemas.util import conform

BAND_WIDTH = 200
# (group, youngest, oldest) by the age reached in the later list's year, as FIDE's age categories count it.
AGE_GROUPS = (("junior", 0, 19), ("adult", 20, 64), ("senior", 65, 200))
UNKNOWN = "unknown"
OTHER = "other"
# The anchor cohort of the FIDE-watchers' pool monitor (Zugzwang Foundation, docs/evidence/E1_fide-lists.md, as
# summarised in ../shared/reference/systems-and-calendar.md): "aged 25-45, steadily active".
COHORT_AGES = (25, 45)
TOP_FEDERATIONS = 10
# Rejected lines of one list named in the warnings (all are counted).
REJECTED_SHOWN = 5
# What the ledger reads of a list, one row per player with a rating.
POOL_COLUMNS = pl.Schema(
    {
        "player_id": pl.Int64,
        "rating": pl.Int32,
        "games": pl.Int32,
        "inactive": pl.Boolean,
        "birth_year": pl.Int32,
        "federation": pl.Utf8,
    }
)
_COUNTS = ["entered", "left", "changed", "unchanged"]
_POINTS = [
    "points_before",
    "points_after",
    "points_entered",
    "points_left",
    "stayers_change",
    "stayers_gained",
    "stayers_lost",
    "net_change",
]


@dataclass(frozen=True)
class PoolList:
    """One published list as the ledger reads it: the players it gives a rating, and what its layout can tell."""

    name: str  # as the caller names it (the file given)
    players: pl.DataFrame  # POOL_COLUMNS
    period: str | None = None  # YYYY-MM of the list, when known
    has_flag: bool = True  # the layout has the flag column (i = inactive)
    has_games: bool = True  # the layout has the games column
    has_birth: bool = True  # the layout has the birth column
    layout: str | None = None
    rating_type: str = "standard"
    size_bytes: int | None = None
    records: int | None = None  # player lines read
    rejected: int = 0  # player lines the parser could not use
    rejected_lines: tuple[str, ...] = field(default_factory=tuple)  # "line N: problem", the first few
    # The ids read from the rejected lines (not duplicates) of players the list does not otherwise give, and how many
    # rejected lines have no readable id.
    rejected_ids: pl.Series = field(default_factory=lambda: pl.Series("player_id", [], dtype=pl.Int64))
    rejected_without_id: int = 0

    @property
    def games_filled(self) -> bool:
        """Whether the list fills its games column: APR04FRL.TXT has the column but 0 for every player."""
        return self.has_games and bool(self.players.select((pl.col("games") > 0).any()).item())

    @property
    def inactive_players(self) -> int | None:
        return int(self.players["inactive"].sum()) if self.has_flag else None


@dataclass(frozen=True)
class PoolHealth:
    """pool_health's answer: the ledger of every consecutive pair, the cohort drift, and what could not be computed."""

    lists: list[PoolList]
    transitions: pl.DataFrame  # PoolTransitions
    cohorts: pl.DataFrame  # CohortDrift
    notes: dict[int, list[str]]  # per transition number


# -- reading lists ---------------------------------------------------------------------------------


def pool_list_from_fide(
    parsed: FideListFile, name: str, rating_type: str | None = None, size_bytes: int | None = None
) -> PoolList:
    """The `rating_type` list (default the file's own) of a parsed FIDE list: the players with such a rating.

    A combined list (layouts A, C) holds all three ratings and its unrated players: those are not on the list.
    """
    kind = rating_type or parsed.rating_type
    fields = LAYOUTS[parsed.layout]
    rejected_ids = _rejected_ids(parsed)
    players = parsed.players.filter(pl.col(f"{kind}_rating").is_not_null()).select(
        "player_id",
        pl.col(f"{kind}_rating").alias("rating"),
        pl.col(f"{kind}_games").alias("games"),
        pl.col("inactive") if "flag" in fields else pl.lit(None, pl.Boolean).alias("inactive"),
        "birth_year",
        "federation",
    )
    return PoolList(
        name=name,
        players=players.cast(POOL_COLUMNS),
        period=parsed.period,
        has_flag="flag" in fields,
        has_games=(f"{kind}_games" if parsed.layout in COMBINED else "games") in fields,
        has_birth="birth" in fields,
        layout=parsed.layout,
        rating_type=kind,
        size_bytes=size_bytes,
        records=parsed.records,
        rejected=parsed.rejected.height,
        rejected_lines=tuple(
            f"line {line}: {detail}"
            for line, detail in parsed.rejected.sort("source_line")
            .head(REJECTED_SHOWN)
            .select("source_line", "detail")
            .iter_rows()
        ),
        rejected_ids=rejected_ids["player_id"].drop_nulls().unique().sort(),
        rejected_without_id=rejected_ids["player_id"].null_count(),
    )


def _rejected_ids(parsed: FideListFile) -> pl.DataFrame:
    """player_id of each rejected line that is not a duplicate (null where the id field is no number), less the
    players the list gives on another line: a player whose one line was rejected is not known to be off the list.
    """
    start, stop = LAYOUTS[parsed.layout]["player_id"]
    lines = parsed.rejected.filter(pl.col("reason") != "duplicate")
    ids = lines.select(
        pl.col("raw_text")
        .str.slice(start, stop - start)
        .str.strip_chars()
        .cast(pl.Int64, strict=False)
        .alias("player_id")
    )
    listed = pl.col("player_id").is_in(parsed.players["player_id"].cast(pl.Int64).implode()).fill_null(False)
    return ids.filter(~listed)


def read_pool_list(path: str, rating_type: str | None = None) -> PoolList:
    """One FIDE list file (any layout A-F; .gz, .zst, or a .zip holding the one list as FIDE's downloads do).

    Raises InputFileError naming the file for a file that cannot be read, is not a FIDE list, is a per-type
    list of another rating type than `rating_type`, or has no player with such a rating.
    """
    content, inner = _list_bytes(path)
    try:
        parsed = parse_fide_list(content, inner)
    except UnreadableDump as problem:
        raise InputFileError(f"{path}: {problem}") from None
    if parsed.players.is_empty() and parsed.rejected.height:
        first = parsed.rejected.sort("source_line").row(0, named=True)
        raise InputFileError(
            f"{path}: no player line could be read (line {first['source_line']}: {first['detail']}; "
            f"{parsed.rejected.height:,} lines rejected)"
        )
    kind = rating_type or parsed.rating_type
    if parsed.layout not in COMBINED and parsed.rating_type != kind:
        raise InputFileError(
            f"{path}: a {parsed.rating_type} list, but the lists are compared as {kind} lists: "
            "give lists of one rating type"
        )
    pool = pool_list_from_fide(parsed, path, kind, size_bytes=Path(path).stat().st_size)
    if pool.players.is_empty():
        raise InputFileError(f"{path}: no player has a {kind} rating (layout {parsed.layout})")
    return pool


def _list_bytes(path: str) -> tuple[bytes, str]:
    """The decompressed bytes of a list file and the name that tells its rating type and month."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise InputFileError(f"{path}: cannot be read: {error.strerror or error}") from None
    inner, compression = strip_compression(path)
    if compression is None and path.lower().endswith(".zip"):
        return _unzipped(data, path)
    try:
        return decompress(data, compression), inner
    except UnreadableDump as problem:
        raise InputFileError(f"{path}: {problem}") from None


def _unzipped(data: bytes, path: str) -> tuple[bytes, str]:
    """The one file of a zip (FIDE's standard_jan25frl.zip holds standard_rating_list.txt), read within the cap."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = [info for info in archive.infolist() if not info.is_dir()]
            if len(members) != 1:
                raise InputFileError(f"{path}: a zip of {len(members)} files; give the one list file itself")
            member = members[0]
            if member.file_size > MAX_DECOMPRESSED_BYTES:
                raise InputFileError(f"{path}: {member.filename} is larger than the 512 MiB a list may have")
            with archive.open(member) as handle:
                content = handle.read(MAX_DECOMPRESSED_BYTES + 1)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as error:
        raise InputFileError(f"{path}: not a readable zip file ({error})") from None
    if len(content) > MAX_DECOMPRESSED_BYTES:
        raise InputFileError(f"{path}: {member.filename} is larger than the 512 MiB a list may have")
    # The zip's name keeps the month (standard_jan25frl.zip); its member may not (standard_rating_list.txt).
    return content, f"{Path(path).name}/{member.filename}"


def with_periods(lists: Sequence[PoolList], months: Sequence[str]) -> list[PoolList]:
    """The lists dated by the caller (one YYYY-MM per list, in order), for lists whose date the file does not give.

    A month that contradicts the date a file states (its header or name) is a ValueError naming the file and both
    months: the file's own date is not overridden silently. A layout F list's birth years, whose century was chosen
    without the list's month, are derived again with it (two_digit_birth_year).
    """
    if len(months) != len(lists):
        raise ValueError(f"{len(months)} months given for {len(lists)} lists: give one month per list, in order")
    for month in months:
        parse_month(month)
    for pool, month in zip(lists, months, strict=True):
        if pool.period is not None and pool.period != month:
            raise ValueError(
                f"{pool.name}: the file states the list of {pool.period}, --months gives {month}: give the file's "
                "own month, in the order the lists are given"
            )
    return [_dated(pool, month) for pool, month in zip(lists, months, strict=True)]


def _dated(pool: PoolList, month: str) -> PoolList:
    if pool.layout != "F" or pool.period == month:
        return replace(pool, period=month)
    birth_year = two_digit_birth_year(pl.col("birth_year") % 100, month).cast(pl.Int32)
    return replace(pool, period=month, players=pool.players.with_columns(birth_year.alias("birth_year")))


# -- the ledger --------------------------------------------------------------------------------------


def pool_health(lists: Sequence[PoolList], federations: int = TOP_FEDERATIONS) -> PoolHealth:
    """The ledger of every consecutive pair of `lists` (in the order given) and its cohort drift.

    `federations`: how many of the later list's largest federations get a group of their own (0: no
    federation groups). Raises ValueError for fewer than two lists.
    """
    if len(lists) < 2:
        raise ValueError(f"pool health compares two or more lists in order; {len(lists)} given")
    tables, cohorts, notes = [], [], {}
    for number, (earlier, later) in enumerate(pairwise(lists), start=1):
        table, cohort, said = _transition(number, earlier, later, federations)
        tables.append(table)
        cohorts.append(cohort)
        notes[number] = said
    return PoolHealth(list(lists), pl.concat(tables), pl.concat(cohorts), notes)


def months_between(earlier: str | None, later: str | None) -> int | None:
    return None if earlier is None or later is None else month_index(later) - month_index(earlier)


def _without_rejected(earlier: PoolList, later: PoolList) -> tuple[PoolList, PoolList, list[str]]:
    """The two lists without the players whose line one of them rejected: such a player is not known to have left
    or entered, so neither list's side of them is compared; the notes count them, and the rejected lines without a
    readable id, whose players may still count as left or entered.
    """
    notes: list[str] = []
    kept = []
    for pool, other in ((earlier, later), (later, earlier)):
        gone = pl.col("player_id").is_in(other.rejected_ids.implode())
        left_out = pool.players.select(gone.sum()).item()
        if left_out:
            notes.append(
                f"{left_out:,} player(s) on {pool.name} whose line on {other.name} was rejected are left out of both "
                "lists here (neither left nor entered)"
            )
        kept.append(replace(pool, players=pool.players.filter(~gone)) if left_out else pool)
    for pool, other, fate in ((earlier, later, "entered"), (later, earlier, "left")):
        if pool.rejected_without_id:
            notes.append(
                f"{pool.rejected_without_id:,} rejected line(s) of {pool.name} have no readable FIDE id: their "
                f"players, if on {other.name}, count as {fate}"
            )
    return kept[0], kept[1], notes


def _transition(
    number: int, earlier: PoolList, later: PoolList, federations: int
) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    earlier, later, notes = _without_rejected(earlier, later)
    year = parse_month(later.period)[0] if later.period else None
    both = earlier.players.join(later.players, on="player_id", how="full", coalesce=True, suffix="_b").rename(
        {column: f"{column}_a" for column in POOL_COLUMNS if column != "player_id"}
    )
    fate = (
        pl.when(pl.col("rating_a").is_null())
        .then(pl.lit("entered"))
        .when(pl.col("rating_b").is_null())
        .then(pl.lit("left"))
        .when(pl.col("rating_a") == pl.col("rating_b"))
        .then(pl.lit("unchanged"))
        .otherwise(pl.lit("changed"))
    )
    # An entrant is grouped by the later list, a leaver or stayer by the earlier one (coalesce: the earlier first).
    age = pl.lit(year, pl.Int32) - pl.coalesce("birth_year_a", "birth_year_b")
    both = both.with_columns(
        fate.alias("fate"),
        pl.col("rating_a", "rating_b").cast(pl.Int64),
        (pl.coalesce("rating_a", "rating_b") // BAND_WIDTH * BAND_WIDTH).alias("band"),
        age.alias("age"),
        pl.coalesce("federation_a", "federation_b").alias("federation"),
    )
    if year is None:
        notes.append(f"the date of {later.name} is unknown (give --months): every age group is {UNKNOWN}")
    else:
        # Every player the age groups leave out is counted: an age outside them (a birth year after the list's)
        # falls to the unknown group as a missing birth year does.
        lowest, highest = AGE_GROUPS[0][1], AGE_GROUPS[-1][2]
        missing, outside = both.select(
            pl.col("age").is_null().sum().alias("missing"),
            (~pl.col("age").is_between(lowest, highest)).sum().alias("outside"),
        ).row(0)
        if missing:
            notes.append(f"{missing:,} players without a birth year are in the age group {UNKNOWN}")
        if outside:
            notes.append(
                f"{outside:,} players whose birth year gives an age outside {lowest}-{highest} in {year} are in the "
                f"age group {UNKNOWN}"
            )
    for pool in (earlier, later):
        if not pool.has_birth:
            notes.append(f"{pool.name}: layout {pool.layout} has no birth column: ages are unknown")
    groups = [
        both.select(
            dimension=pl.lit("all"), group=pl.lit("all"), order=pl.lit(0), fate="fate", a="rating_a", b="rating_b"
        )
    ]
    groups.append(
        both.select(
            dimension=pl.lit("band"),
            group=pl.format("{}-{}", "band", pl.col("band") + BAND_WIDTH - 1),
            order="band",
            fate="fate",
            a="rating_a",
            b="rating_b",
        )
    )
    age_group, age_order = pl.lit(UNKNOWN), pl.lit(len(AGE_GROUPS))
    for index, (label, low, high) in reversed(list(enumerate(AGE_GROUPS))):
        inside = pl.col("age").is_between(low, high)
        age_group = pl.when(inside).then(pl.lit(label)).otherwise(age_group)
        age_order = pl.when(inside).then(pl.lit(index)).otherwise(age_order)
    groups.append(
        both.select(dimension=pl.lit("age"), group=age_group, order=age_order, fate="fate", a="rating_a", b="rating_b")
    )
    if federations > 0:
        largest = (
            later.players.drop_nulls("federation")
            .group_by("federation")
            .len()
            .sort(["len", "federation"], descending=[True, False])
            .head(federations)["federation"]
        )
        rank = pl.col("federation").replace_strict(
            largest, pl.int_range(largest.len(), eager=True), default=None, return_dtype=pl.Int64
        )
        groups.append(
            both.select(
                dimension=pl.lit("federation"),
                group=pl.when(pl.col("federation").is_null())
                .then(pl.lit(UNKNOWN))
                .when(rank.is_null())
                .then(pl.lit(OTHER))
                .otherwise(pl.col("federation")),
                order=pl.when(pl.col("federation").is_null())
                .then(pl.lit(federations + 1))
                .otherwise(rank.fill_null(federations)),
                fate="fate",
                a="rating_a",
                b="rating_b",
            )
        )
    long = pl.concat([frame.with_columns(pl.col("order").cast(pl.Int64)) for frame in groups])
    table = _ledger(long).with_columns(
        transition=pl.lit(number, pl.Int32),
        from_list=pl.lit(earlier.name),
        to_list=pl.lit(later.name),
        from_period=pl.lit(earlier.period, pl.Utf8),
        to_period=pl.lit(later.period, pl.Utf8),
    )
    table = conform(table, PoolTransitions)
    _check_balances(table, earlier, later)
    cohort, cohort_notes = _cohort(number, earlier, later, both, year)
    return table, cohort, notes + [f"cohort: {note}" for note in cohort_notes]


def _ledger(long: pl.DataFrame) -> pl.DataFrame:
    """Counts and points per dimension and group of the players' (dimension, group, fate, a, b) rows."""
    change = pl.col("b") - pl.col("a")  # null unless on both lists
    table = long.group_by("dimension", "group").agg(
        *[(pl.col("fate") == fate).sum().cast(pl.Int64).alias(fate) for fate in _COUNTS],
        pl.col("a").sum().alias("points_before"),
        pl.col("b").sum().alias("points_after"),
        pl.col("b").filter(pl.col("fate") == "entered").sum().alias("points_entered"),
        pl.col("a").filter(pl.col("fate") == "left").sum().alias("points_left"),
        change.sum().alias("stayers_change"),
        change.clip(lower_bound=0).sum().alias("stayers_gained"),
        (-change).clip(lower_bound=0).sum().alias("stayers_lost"),
        pl.col("order").first(),
    )
    dimension_order = pl.col("dimension").replace_strict(POOL_DIMENSIONS, list(range(len(POOL_DIMENSIONS))))
    return (
        table.with_columns(pl.col(column).cast(pl.Int64) for column in _POINTS if column != "net_change")
        .with_columns(net_change=pl.col("points_after") - pl.col("points_before"))
        .sort(dimension_order, "order", "group")
    )


def _check_balances(table: pl.DataFrame, earlier: PoolList, later: PoolList) -> None:
    """The ledger's identities, exactly: every row balances, each dimension adds up to the pool, the pool's totals
    are the lists' own. A failure is a fault of this code, never of the lists.
    """
    unbalanced = table.filter(
        pl.col("net_change") != pl.col("points_entered") - pl.col("points_left") + pl.col("stayers_change")
    )
    if unbalanced.height:
        raise AssertionError(f"pool ledger does not balance: {unbalanced.row(0, named=True)}")
    pool = table.filter(pl.col("dimension") == "all").select(_COUNTS + _POINTS).row(0)
    before, after = (
        pool[len(_COUNTS) + _POINTS.index("points_before")],
        pool[len(_COUNTS) + _POINTS.index("points_after")],
    )
    totals = (int(earlier.players["rating"].cast(pl.Int64).sum()), int(later.players["rating"].cast(pl.Int64).sum()))
    if (before, after) != totals:
        raise AssertionError(f"pool ledger totals {(before, after)} are not the lists' totals {totals}")
    added = table.group_by("dimension").agg(pl.col(_COUNTS + _POINTS).sum())
    for row in added.iter_rows():
        if tuple(row[1:]) != pool:
            raise AssertionError(f"pool ledger's {row[0]} groups add up to {row[1:]}, not the pool's {pool}")


def _cohort(
    number: int, earlier: PoolList, later: PoolList, both: pl.DataFrame, year: int | None
) -> tuple[pl.DataFrame, list[str]]:
    """The stable cohort: aged COHORT_AGES in the later list's year, on both lists, steadily active by every test
    the lists allow (not flagged inactive on either list; games > 0 on the later list where it fills the column).
    """
    low, high = COHORT_AGES
    notes: list[str] = []
    tests, keep = [], (pl.col("fate") == "changed") | (pl.col("fate") == "unchanged")
    flagged = [pool for pool in (earlier, later) if pool.has_flag]
    if flagged:
        tests.append("not flagged inactive on " + ("either list" if len(flagged) == 2 else flagged[0].name))
        for pool, suffix in ((earlier, "a"), (later, "b")):
            if pool.has_flag:
                keep &= ~pl.col(f"inactive_{suffix}").fill_null(False)
    for pool in (earlier, later):
        if not pool.has_flag:
            notes.append(f"{pool.name}: layout {pool.layout} has no flag column: inactivity not tested on it")
        elif pool.inactive_players == 0:
            notes.append(f"{pool.name}: no player is flagged inactive")
    if later.games_filled:
        tests.append(f"games > 0 on {later.name}")
        keep &= pl.col("games_b") > 0
    elif later.has_games:
        notes.append(f"{later.name}: no player has games > 0 (the column is not filled in): games not tested")
    else:
        notes.append(f"{later.name}: layout {later.layout} has no games column: games not tested")
    months = months_between(earlier.period, later.period)
    missing: list[str] = []
    if year is None:
        missing.append(f"the date of {later.name} is unknown: ages cannot be counted")
    elif not later.has_birth and not earlier.has_birth:
        missing.append("neither list has a birth column: ages cannot be counted")
    keep &= pl.col("age").is_between(low, high)
    changes = both.filter(keep).select(pl.col("rating_b") - pl.col("rating_a")).to_series()
    found = changes.median() if changes.len() else None
    median = float(found) if isinstance(found, int | float) else None
    annual = None
    if months is not None and months <= 0:
        missing.append(f"{later.name} is not later than {earlier.name}: no annual drift")
    elif months is None:
        missing.append("a list's date is unknown (give --months): no annual drift")
    elif median is not None:
        annual = median * 12 / months
    notes += missing
    note = "; ".join(notes) or None
    row = pl.DataFrame(
        {
            "transition": [number],
            "from_list": [earlier.name],
            "to_list": [later.name],
            "months": [months],
            "age_low": [low],
            "age_high": [high],
            "activity": ["; ".join(tests) if tests else "no test of activity possible"],
            "players": [changes.len()],
            "median_change": [median],
            "annual_drift": [annual],
            "note": [note],
        }
    )
    return conform(row, CohortDrift), notes


# -- output -----------------------------------------------------------------------------------------


def _figures(row: dict) -> dict:
    return {
        **{count: int(row[count]) for count in _COUNTS},
        "points": {
            "before": row["points_before"],
            "after": row["points_after"],
            "change": row["net_change"],
            "entered": row["points_entered"],
            "left": row["points_left"],
            "stayers": row["stayers_change"],
            "stayers_gained": row["stayers_gained"],
            "stayers_lost": row["stayers_lost"],
        },
    }


def pool_health_json(health: PoolHealth) -> dict:
    """The `ratings pool-health --json` object: {"lists": [...], "transitions": [{"from", "to", "entered", "left",
    "changed", "unchanged", "points", "groups", "cohort", "notes"}, ...]}.
    """
    lists = [
        {
            "file": pool.name,
            "bytes": pool.size_bytes,
            "layout": pool.layout,
            "rating_type": pool.rating_type,
            "period": pool.period,
            "records": pool.records,
            "rejected_lines": pool.rejected,
            "players": pool.players.height,
            "inactive": pool.inactive_players,
        }
        for pool in health.lists
    ]
    transitions = []
    for cohort in health.cohorts.iter_rows(named=True):
        number = cohort["transition"]
        rows = health.transitions.filter(pl.col("transition") == number)
        pool = rows.filter(pl.col("dimension") == "all").row(0, named=True)
        groups: dict[str, list[dict]] = {}
        for row in rows.filter(pl.col("dimension") != "all").iter_rows(named=True):
            groups.setdefault(row["dimension"], []).append({"group": row["group"], **_figures(row)})
        transitions.append(
            {
                "from": pool["from_list"],
                "to": pool["to_list"],
                "from_period": pool["from_period"],
                "to_period": pool["to_period"],
                "months": cohort["months"],
                **_figures(pool),
                "groups": groups,
                "cohort": {
                    "ages": [cohort["age_low"], cohort["age_high"]],
                    "activity": cohort["activity"],
                    "players": cohort["players"],
                    "median_change": cohort["median_change"],
                    "annual_drift": None if cohort["annual_drift"] is None else round(cohort["annual_drift"], 2),
                    "note": cohort["note"],
                },
                "notes": health.notes[number],
            }
        )
    return {"lists": lists, "transitions": transitions}


def pool_health_text(health: PoolHealth) -> str:
    """A readable ledger: per transition the pool's balance, a table of counts and points per group, the cohort."""
    out: list[str] = []
    by_name = {pool.name: pool for pool in health.lists}
    header = f"  {'group':<18}{'entered':>9}{'left':>9}{'changed':>9}{'unchanged':>10}"
    header += f"{'+entered':>13}{'-left':>13}{'stayers':>11}{'net':>12}"
    for cohort in health.cohorts.iter_rows(named=True):
        number = cohort["transition"]
        rows = health.transitions.filter(pl.col("transition") == number)
        pool = rows.filter(pl.col("dimension") == "all").row(0, named=True)
        earlier, later = by_name[pool["from_list"]], by_name[pool["to_list"]]
        months = cohort["months"]
        out.append(
            f"{number}. {_describe(earlier)} -> {_describe(later)}"
            + (f", {months} month{'s' if months != 1 else ''}" if months is not None else "")
        )
        out.append(
            f"  pool {pool['points_before']:,} -> {pool['points_after']:,} points ({pool['net_change']:+,}) = "
            f"entered +{pool['points_entered']:,} - left {pool['points_left']:,} "
            f"+ stayers {pool['stayers_change']:+,} (+{pool['stayers_gained']:,} / -{pool['stayers_lost']:,})"
        )
        out.append(header)
        for row in rows.iter_rows(named=True):
            label = "all" if row["dimension"] == "all" else f"{_SHORT[row['dimension']]} {row['group']}"
            out.append(
                f"  {escape_text(label):<18}{row['entered']:>9,}{row['left']:>9,}{row['changed']:>9,}"
                f"{row['unchanged']:>10,}{row['points_entered']:>13,}{row['points_left']:>13,}"
                f"{row['stayers_change']:>+11,}{row['net_change']:>+12,}"
            )
        low, high = cohort["age_low"], cohort["age_high"]
        year = f" in {pool['to_period'][:4]}" if pool["to_period"] else ""
        line = f"  cohort: aged {low}-{high}{year}, on both lists, {escape_text(cohort['activity'])}: "
        line += f"{cohort['players']:,} players"
        if cohort["median_change"] is not None:
            line += f", median change {cohort['median_change']:+.1f}"
            if cohort["annual_drift"] is not None:
                line += f" ({cohort['annual_drift']:+.1f} a year)"
        out.append(line)
        out.extend(f"  note: {escape_text(note)}" for note in health.notes[number])
        out.append("")
    return "\n".join(out).rstrip("\n")


_SHORT = {"band": "band", "age": "age", "federation": "fed"}


def _describe(pool: PoolList) -> str:
    facts = [pool.period or "date unknown"]
    if pool.layout is not None:
        facts.append(f"layout {pool.layout}")
    facts.append(f"{pool.rating_type}, {pool.players.height:,} rated")
    return f"{escape_text(pool.name)} ({', '.join(facts)})"
