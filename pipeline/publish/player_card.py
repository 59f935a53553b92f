"""One player from a store: rating history under every scenario, a month's calculation as FIDE shows it, performance
ratings.

The calculation repeats the engine's arithmetic on the stored `rated_games`: per game the change is
K x (score - expected) x weight, K being the list's `k_used` (K after the K x n cap); the period's
change is their sum rounded once to the nearest whole number, 0.5 away from zero (§8.3.4). For the
rule sets that round per period (every preset) that is exactly the list's `change`; a rule set that
rounds per event (`rounding: per-event`) rounds each event's sum instead, so the two may differ.
Only the rows of the one player are read from each table (Polars scan + filter).
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from html import escape

import polars as pl

from pipeline.analytics.performance import performance_ratings
from pipeline.ingest.landing import RAW, REGISTRY_FOLDER
from pipeline.scenarios.model import canonical_name
from pipeline.store.object_store import ObjectStore
from pipeline.text import escape_text

DEFAULT_SCENARIO = "actual"
RATING_LIST, RATED_GAMES, IDENTITY = "rating_list", "rated_games", "identity"


class PlayerReportError(ValueError):
    """The store cannot answer for this player (no lists, unknown id or scenario, month not stored)."""


@dataclass
class PlayerReport:
    """What `ratings player` prints and writes as HTML."""

    player_id: int
    name: str | None
    scenarios: list[str]  # every scenario of the store, in history column order
    scenario: str  # the scenario whose calculation is shown
    month: str
    history: pl.DataFrame  # month, one rating column per scenario, games (under `scenario`)
    list_row: dict  # the player's row of <scenario>/rating_list/<month>: rating, change, k_used, games
    games: pl.DataFrame  # the month's games, one row each, with expected score and change
    performance: pl.DataFrame  # Performance rows of the player for the month (scope month, then events)
    total_change: float | None  # K x sum of (score - expected) x weight, unrounded; None when no game was rated
    rounded_change: int | None  # total_change rounded once, 0.5 away from zero


def store_scenarios(store: ObjectStore) -> list[str]:
    """Scenarios (asset-key prefixes) with at least one stored rating list: `actual` first, then by name."""
    found = [name for name in store.list_dirs() if name != RAW and _months(store, name)]
    return sorted(found, key=lambda name: (name != DEFAULT_SCENARIO, name))


def _months(store: ObjectStore, scenario: str) -> list[str]:
    prefix = f"{scenario}/{RATING_LIST}/"
    return sorted(
        key[len(prefix) : -len(".parquet")]
        for key in store.list_files(scenario, RATING_LIST)
        if key.startswith(prefix) and key.endswith(".parquet") and "/" not in key[len(prefix) :]
    )


def rating_history(store: ObjectStore, player_id: int, scenarios: list[str]) -> pl.DataFrame:
    """scenario, month, rating, change, k_used, games of the player on every stored list (only that player's rows are
    read).
    """
    scans = [
        store.scan_parquet(ObjectStore.table_key(f"{scenario}/{RATING_LIST}", month))
        .filter(pl.col("player_id") == player_id)
        .select(
            pl.lit(scenario).alias("scenario"),
            pl.lit(month).alias("month"),
            pl.col("rating").cast(pl.Int32),
            pl.col("change").cast(pl.Int32),
            pl.col("k_used").cast(pl.Int16),
            pl.col("games").cast(pl.Int32),
        )
        for scenario in scenarios
        for month in _months(store, scenario)
    ]
    if not scans:
        return pl.DataFrame(
            schema={
                "scenario": pl.Utf8,
                "month": pl.Utf8,
                "rating": pl.Int32,
                "change": pl.Int32,
                "k_used": pl.Int16,
                "games": pl.Int32,
            }
        )
    # One collect: Polars reads the files in parallel.
    return pl.concat(scans).collect().sort("month", "scenario")


def history_table(rows: pl.DataFrame, scenarios: list[str], scenario: str) -> pl.DataFrame:
    """month, one rating column per scenario (null: unrated or not on that list), games under `scenario`."""
    months = rows.select("month").unique().sort("month")
    table = months
    for name in scenarios:
        table = table.join(
            rows.filter(pl.col("scenario") == name).select("month", pl.col("rating").alias(name)),
            on="month",
            how="left",
        )
    games = rows.filter(pl.col("scenario") == scenario).select("month", "games")
    return table.join(games, on="month", how="left").sort("month")


def player_report(
    store: ObjectStore, player_id: int, scenario: str | None = None, month: str | None = None
) -> PlayerReport:
    """The report of one player; default scenario `actual` (else the first), default month the latest they played."""
    scenarios = store_scenarios(store)
    if not scenarios:
        raise PlayerReportError(f"{store.url()}: no rating list in the store (materialize some months first)")
    if scenario is not None:
        wanted = canonical_name(scenario)
        if wanted not in scenarios:
            raise PlayerReportError(
                f"scenario {scenario!r} has no rating list in the store (has: {', '.join(scenarios)})"
            )
        scenario = wanted
    else:
        scenario = scenarios[0]
    rows = rating_history(store, player_id, scenarios)
    if rows.is_empty():
        raise PlayerReportError(f"player {player_id} is on no rating list of {store.url()}")
    own = rows.filter(pl.col("scenario") == scenario)
    if month is None:
        played = own.filter(pl.col("games") > 0)
        latest = (played if played.height else own)["month"].max() if own.height else None
        if not isinstance(latest, str):  # a "YYYY-MM" text column: None when the player has no row
            raise PlayerReportError(f"player {player_id} is on no {scenario} rating list")
        month = latest
    elif not store.exists(ObjectStore.table_key(f"{scenario}/{RATING_LIST}", month)):
        raise PlayerReportError(f"no {scenario} rating list for {month} in the store")
    list_rows = own.filter(pl.col("month") == month)
    if list_rows.is_empty():
        raise PlayerReportError(f"player {player_id} is not on the {scenario} rating list of {month}")
    list_row = list_rows.row(0, named=True)
    names = _names(store, month)
    player_games = _player_rated_games(store, scenario, month, player_id)
    games = month_games(player_games, player_id, list_row["k_used"], names)
    total, rounded = period_change(games, list_row["k_used"])
    performance = performance_ratings(player_games, month).filter(pl.col("player_id") == player_id)
    return PlayerReport(
        player_id=player_id,
        name=_name_of(names, player_id),
        scenarios=scenarios,
        scenario=scenario,
        month=month,
        history=history_table(rows, scenarios, scenario),
        list_row=list_row,
        games=games,
        performance=performance,
        total_change=total,
        rounded_change=rounded,
    )


def _name_of(names: pl.DataFrame, player_id: int) -> str | None:
    found = names.filter(pl.col("player_id") == player_id)["name"]
    return found[0] if len(found) else None


def _player_rated_games(store: ObjectStore, scenario: str, month: str, player_id: int) -> pl.DataFrame:
    key = ObjectStore.table_key(f"{scenario}/{RATED_GAMES}", month)
    if not store.exists(key):
        raise PlayerReportError(f"no {scenario} rated_games for {month} in the store")
    mine = (pl.col("white_id") == player_id) | (pl.col("black_id") == player_id)
    return store.scan_parquet(key).filter(mine).collect()


def month_games(rated_games: pl.DataFrame, player_id: int, k_used: int | None, names: pl.DataFrame) -> pl.DataFrame:
    """The player's games among `rated_games` as FIDE's individual calculation lists them, in event and game order.

    change = K x (score - expected) x weight; null when the game does not count for the player (unrated
    before the month, opponent without a rating, unrated time control).
    """
    games = rated_games.filter((pl.col("white_id") == player_id) | (pl.col("black_id") == player_id))
    white = pl.col("white_id") == player_id
    table = games.select(
        "game_id",
        "event_id",
        pl.when(white).then(pl.lit("w")).otherwise(pl.lit("b")).alias("colour"),
        pl.when(white).then(pl.col("black_id")).otherwise(pl.col("white_id")).alias("opponent_id"),
        pl.when(white).then(pl.col("white_rating_used")).otherwise(pl.col("black_rating_used")).alias("own_rating"),
        pl.when(white)
        .then(pl.col("black_rating_used"))
        .otherwise(pl.col("white_rating_used"))
        .alias("opponent_rating"),
        pl.when(white).then(pl.col("white_score")).otherwise(1.0 - pl.col("white_score")).alias("score"),
        pl.when(white).then(pl.col("white_expected")).otherwise(pl.col("black_expected")).alias("expected"),
        "weight",
    )
    # Expected scores are hundredths (table 8.1.2): work in hundredths, as the engine does, so sums are exact.
    delta_h = (pl.col("score") * 100.0 - (pl.col("expected") * 100.0).round(9)) * pl.col("weight")
    k = pl.lit(k_used, dtype=pl.Float64)
    return (
        table.join(names.rename({"player_id": "opponent_id", "name": "opponent_name"}), on="opponent_id", how="left")
        .with_columns(delta_h=delta_h, change=k * delta_h / 100.0)
        .select(
            "event_id",
            "game_id",
            "colour",
            "opponent_id",
            "opponent_name",
            "own_rating",
            "opponent_rating",
            "score",
            "expected",
            "weight",
            "delta_h",
            "change",
        )
        .sort("event_id", "game_id")
    )


def period_change(games: pl.DataFrame, k_used: int | None) -> tuple[float | None, int | None]:
    """(K x sum of the counted games' (score - expected) x weight, that rounded once 0.5 away from zero)."""
    counted = games.filter(pl.col("delta_h").is_not_null())
    if k_used is None or counted.is_empty():
        return None, None
    total = float(k_used) * float(counted["delta_h"].sum()) / 100.0
    return total, int(math.copysign(math.floor(abs(total) + 0.5), total))


def _names(store: ObjectStore, month: str) -> pl.DataFrame:
    """player_id, name: the registry in force in `month`, else the name the month's dumps wrote (identity table)."""
    frames = []
    if store.exists(RAW, REGISTRY_FOLDER):
        from pipeline.ingest.registry import read_players

        frames.append(read_players(store, month).select("player_id", "name"))
    key = ObjectStore.table_key(IDENTITY, month)
    if store.exists(key):
        frames.append(store.read_parquet(key, columns=["player_id", "name"]).drop_nulls())
    if not frames:
        return pl.DataFrame(schema={"player_id": pl.Int64, "name": pl.Utf8})
    return pl.concat([f.cast({"player_id": pl.Int64, "name": pl.Utf8}) for f in frames]).unique(
        "player_id", keep="first", maintain_order=True
    )


# -- rendering ---------------------------------------------------------------------------------


def _fmt(value: object, spec: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def _signed(value: float | int | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:+.{digits}f}"


def _result(score: float) -> str:
    return {1.0: "1", 0.5: "½", 0.0: "0"}.get(score, str(score))


def _summary_lines(report: PlayerReport) -> list[str]:
    row = report.list_row
    before = None if row["rating"] is None or row["change"] is None else row["rating"] - row["change"]
    lines = [
        f"Rating before {_fmt(before)}, K {_fmt(row['k_used'])}, rated games {_fmt(row['games'])}; "
        f"rating after {_fmt(row['rating'])}.",
    ]
    if report.total_change is None:
        lines.append("No game changed a rating this month (unrated before it, or no rated opponent).")
    else:
        agrees = "equal to" if report.rounded_change == row["change"] else "NOT equal to"
        lines.append(
            f"Total change: K x sum of (score - expected) x weight = {report.total_change:+.2f}, "
            f"rounded once (0.5 away from zero) {report.rounded_change:+d}, {agrees} the list's change "
            f"{_signed(row['change'])}."
        )
    return lines


def _performance_rows(report: PlayerReport) -> pl.DataFrame:
    return report.performance.select(
        pl.coalesce("event_id", pl.lit("(whole month)")).alias("event"),
        "games",
        "score",
        pl.col("average_opponent").round(1).alias("Ra"),
        "p",
        "dp",
        pl.col("performance_fide").alias("FIDE Ra+dp"),
        pl.col("performance_400").alias("algorithm of 400"),
    )


def render_text(report: PlayerReport) -> str:
    """The report for a terminal; names from files are escaped (no control characters reach the terminal)."""
    title = f"Player {report.player_id}" + (f"  {escape_text(report.name)}" if report.name else "")
    out = [title, "", f"Rating history (the list after each month's games; games: rated games under {report.scenario})"]
    columns = ["month", *report.scenarios, "games"]
    widths = [max(7, len(c)) for c in columns]
    out.append("  ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    for row in report.history.iter_rows(named=True):
        out.append("  ".join(f"{_fmt(row[c]):>{w}}" for c, w in zip(columns, widths, strict=True)))
    out += ["", f"Calculation for {report.month} under {report.scenario}", *_summary_lines(report), ""]
    events = [escape_text(str(e)) for e in report.games["event_id"].to_list()] + [
        escape_text(str(e or "")) for e in report.performance["event_id"].to_list()
    ]
    ew = min(40, max([len("(whole month)"), *map(len, events)]))
    header = (
        f"{'event':<{ew}} {'opp id':>16}  {'opponent':<26} {'Ro':>5} {'opp':>5} {'res':>3} {'exp':>5} {'w':>4} "
        f"{'change':>7}"
    )
    out.append(header)
    for g in report.games.iter_rows(named=True):
        out.append(
            f"{escape_text(str(g['event_id']))[:ew]:<{ew}} {g['opponent_id']:>16}  "
            f"{escape_text(g['opponent_name'] or '')[:26]:<26} "
            f"{_fmt(g['own_rating']):>5} {_fmt(g['opponent_rating']):>5} {_result(g['score']):>3} "
            f"{_fmt(g['expected'], '.2f'):>5} {_fmt(g['weight'], '.2f'):>4} {_signed(g['change'], 2):>7}"
        )
    out += ["", f"Performance ratings, {report.month} (games against opponents with a rating used)"]
    perf = _performance_rows(report)
    if perf.is_empty():
        out.append("no game against an opponent with a rating")
    for p in perf.iter_rows(named=True):
        out.append(
            f"{escape_text(p['event'])[:ew]:<{ew}} games {p['games']:>3}  score {p['score']:>4g}  Ra {p['Ra']:>6.1f}  "
            f"p {p['p']:.2f}  dp {p['dp']:>4}  FIDE {p['FIDE Ra+dp']:>4}  algorithm of 400 {p['algorithm of 400']:>4}"
        )
    return "\n".join(out)


def render_html(report: PlayerReport) -> str:
    """A self-contained page: history table and chart (PNG inline as base64), the month's calculation, performance."""
    from pipeline.reports.charts import plot_rating_history
    from pipeline.reports.page import frame_table_html, html_page, html_text

    title = f"Player {report.player_id}" + (f" {report.name}" if report.name else "")
    png = plot_rating_history(report.history, report.scenarios, title=f"Rating history of {report.player_id}")
    chart = (
        '<img alt="Rating history, one line per scenario" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'
    )
    # Ids and ratings as text: the table would print numbers with thousands separators.
    games = report.games.select(
        "event_id",
        pl.col("opponent_id").cast(pl.Utf8),
        "opponent_name",
        pl.col("own_rating").cast(pl.Utf8).alias("Ro"),
        pl.col("opponent_rating").cast(pl.Utf8).alias("opponent rating"),
        "score",
        "expected",
        "weight",
        pl.col("change").round(2),
    )
    history = report.history.with_columns(pl.col(report.scenarios).cast(pl.Utf8))
    performance = _performance_rows(report).with_columns(pl.col("FIDE Ra+dp", "algorithm of 400").cast(pl.Utf8))
    body = "\n".join(
        [
            f"<h1>{html_text(title)}</h1>",
            (
                f'<p class="meta">Scenarios: {escape(", ".join(report.scenarios))}. Calculation: '
                f"{escape(report.month)} under {escape(report.scenario)}.</p>"
            ),
            "<h2>Rating history</h2>",
            chart,
            frame_table_html(
                history, f"Rating on the list after each month's games; games under {report.scenario}", float_digits=0
            ),
            f"<h2>Calculation for {escape(report.month)} ({escape(report.scenario)})</h2>",
            *(f"<p>{escape(line)}</p>" for line in _summary_lines(report)),
            frame_table_html(games, "change = K x (score - expected) x weight", float_digits=2),
            f"<h2>Performance ratings, {escape(report.month)}</h2>",
            frame_table_html(
                performance,
                "FIDE: Ra + dp (table 8.1.1); algorithm of 400: (sum of ratings + 400 x (W - L)) / n",
                float_digits=2,
            ),
        ]
    )
    return html_page(title, body, extra_css="img { max-width: 100%; }")
