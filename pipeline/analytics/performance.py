"""Performance ratings per player per event and per month, and for one tournament file.

Two methods: FIDE's Ra + dp and the algorithm of 400.

Which games count: a game counts for a player when the opponent has a rating used (the list in force,
or the rating the source states) and, in the pipeline, when the scenario rates its time control
(weight > 0). Every counted game is one game, whatever its weight. The player's own rating plays no
part, so unrated players get performance ratings too. Unplayed games (forfeits, byes) are never
games: the validation stage has already quarantined them.

FIDE's method: Rp = Ra + dp, Ra = the average of the opponents' ratings, dp from table 8.1.1
(Rating Regulations B.02 2024 §8.1; the Title Regulations' norm table is the same table) for the
fractional score p = score / games.
- p is looked up to two decimals, rounded half up (exactly, in integer arithmetic), the convention
  the engine uses for §8.2.3 and the Title Regulations' "0.5 % is rounded up". Only a perfect score
  gives p = 1.00 (dp = +800) and only a zero score p = 0.00 (dp = -800): 0.995 <= p < 1 is looked up
  as 0.99, and 0 < p < 0.005 as 0.01, so that no player loses a point and still gets the 800.
- Rp is rounded once to the nearest whole number, 0.5 up. dp is whole, so this is the same as
  rounding Ra to the nearest whole number (0.5 up) and adding dp; `average_opponent` is kept unrounded.

Algorithm of 400: (sum of the opponents' ratings + 400 x (wins - losses)) / games, rounded to the
nearest whole number, 0.5 up.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from pipeline.rules.regulations import counting_game, dp_of_percent, percent_half_up, ra_plus_dp_rounded
from schemas.performance import Performance
from schemas.util import conform, empty_frame

FIGURE_COLUMNS = (
    "games",
    "wins",
    "draws",
    "losses",
    "score",
    "opponent_rating_sum",
    "average_opponent",
    "p",
    "dp",
    "performance_fide",
    "performance_400",
)
READABLE_FORMATS = ("trf", "pgn", "csv", "parquet")
_TOTALS = ("games", "wins", "draws", "losses", "opponent_rating_sum")


def performance_sides(games: pl.DataFrame) -> pl.DataFrame:
    """One row per counted (player, game; regulations.counting_game): player_id, event_id, opponent_rating, score.

    `games` has the rated_games columns white_id, black_id, event_id, white_score, white_rating_used,
    black_rating_used and weight (games without a weight column all count as rated time controls).
    """
    weight = pl.col("weight") if "weight" in games.columns else pl.lit(1.0)
    white = games.filter(counting_game(weight, pl.col("black_rating_used"))).select(
        player_id=pl.col("white_id"),
        event_id=pl.col("event_id"),
        opponent_rating=pl.col("black_rating_used").cast(pl.Int64),
        score=pl.col("white_score"),
    )
    black = games.filter(counting_game(weight, pl.col("white_rating_used"))).select(
        player_id=pl.col("black_id"),
        event_id=pl.col("event_id"),
        opponent_rating=pl.col("white_rating_used").cast(pl.Int64),
        score=1.0 - pl.col("white_score"),
    )
    return pl.concat([white, black])


def _totals(sides: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Counted games, wins, draws, losses and the opponents' rating sum per `keys` group of `sides`."""
    return sides.group_by(keys).agg(
        games=pl.len().cast(pl.Int64),
        wins=(pl.col("score") == 1.0).sum().cast(pl.Int64),
        draws=(pl.col("score") == 0.5).sum().cast(pl.Int64),
        losses=(pl.col("score") == 0.0).sum().cast(pl.Int64),
        opponent_rating_sum=pl.col("opponent_rating").sum().cast(pl.Int64),
    )


def _figures(totals: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The results and both performance ratings of each row of _totals (see module docstring)."""
    n, points_x2, total = pl.col("games"), 2 * pl.col("wins") + pl.col("draws"), pl.col("opponent_rating_sum")
    # Only a perfect or a zero score reads the table's ends (module docstring).
    percent = percent_half_up(n, points_x2)
    percent = pl.when(points_x2 == 2 * n).then(100).when(points_x2 == 0).then(0).otherwise(percent.clip(1, 99))
    return (
        totals.with_columns(percent=percent)
        .with_columns(dp=dp_of_percent(pl.col("percent")))
        .with_columns(
            score=pl.col("wins").cast(pl.Float64) + 0.5 * pl.col("draws").cast(pl.Float64),
            average_opponent=total.cast(pl.Float64) / n.cast(pl.Float64),
            p=(pl.col("percent").cast(pl.Float64) / 100.0).round(2),
            # Rp = Ra + dp as the regulations round it; (total + 400 (W - L)) / n rounded half up the same way, exactly.
            performance_fide=ra_plus_dp_rounded(n, total, pl.col("dp")).cast(pl.Int32),
            performance_400=((2 * (total + 400 * (pl.col("wins") - pl.col("losses"))) + n) // (2 * n)).cast(pl.Int32),
            dp=pl.col("dp").cast(pl.Int32),
        )
        .select(*keys, *FIGURE_COLUMNS)
    )


def performance_by(sides: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Counted games, results and both performance ratings per `keys` group of `sides` (see module docstring)."""
    return _figures(_totals(sides, keys), keys)


def performance_ratings(rated_games: pl.DataFrame, month: str) -> pl.DataFrame:
    """Performance frame of a month's rated_games: a `month` row per player and an `event` row per player and event."""
    # Every total is a count or a sum of whole numbers, so it is added up in NumPy over the sides sorted by (player,
    # event code), the codes in the event names' order, and the table is made in its order: a player's month row,
    # then their events by name (Polars grouping by the 40-byte names and sorting the table by them: 68 ms for a
    # fide-scale month of 207,000 games, this 45-50).
    names = rated_games["event_id"].drop_nulls().unique().sort()
    event = rated_games["event_id"].cast(pl.Enum(names)).to_physical().cast(pl.Int64).fill_null(-1).to_numpy()
    weight = pl.col("weight") if "weight" in rated_games.columns else pl.lit(1.0)
    counts = rated_games.select(
        counting_game(weight, pl.col("black_rating_used")).fill_null(False).alias("white"),
        counting_game(weight, pl.col("white_rating_used")).fill_null(False).alias("black"),
    )
    white, black = (np.flatnonzero(counts[side].to_numpy()) for side in ("white", "black"))
    if not len(white) + len(black):
        return empty_frame(Performance)
    score = rated_games["white_score"].to_numpy()
    player = np.concatenate([rated_games["white_id"].to_numpy()[white], rated_games["black_id"].to_numpy()[black]])
    side_event = np.concatenate([event[white], event[black]])
    opponent_rating = np.concatenate(
        [_whole(rated_games["black_rating_used"])[white], _whole(rated_games["white_rating_used"])[black]]
    )
    side_score = np.concatenate([score[white], 1.0 - score[black]])

    order = _by_player_and_event(player, side_event)
    player, side_event = player[order], side_event[order]
    side_score, opponent_rating = side_score[order], opponent_rating[order]
    starts = np.flatnonzero(np.r_[True, (player[1:] != player[:-1]) | (side_event[1:] != side_event[:-1])])
    event_totals = {
        "games": np.diff(np.r_[starts, len(player)]),
        "wins": np.add.reduceat((side_score == 1.0).astype(np.int64), starts),
        "draws": np.add.reduceat((side_score == 0.5).astype(np.int64), starts),
        "losses": np.add.reduceat((side_score == 0.0).astype(np.int64), starts),
        "opponent_rating_sum": np.add.reduceat(opponent_rating, starts),
    }
    # A month's totals are its events' (whole numbers: the same sums).
    group_player = player[starts]
    firsts = np.flatnonzero(np.r_[True, group_player[1:] != group_player[:-1]])
    # Each player's month row, then their event rows: an event row moves down by the month rows up to its own.
    month_rows = firsts + np.arange(len(firsts))
    event_rows = np.arange(len(starts)) + np.cumsum(np.r_[True, group_player[1:] != group_player[:-1]])
    size = len(firsts) + len(starts)
    columns: dict[str, np.ndarray] = {}
    for name, totals in {"player_id": group_player, "event": side_event[starts], **event_totals}.items():
        column = np.empty(size, np.int64)
        column[event_rows] = totals
        column[month_rows] = totals[firsts] if name in ("player_id", "event") else np.add.reduceat(totals, firsts)
        columns[name] = column
    is_event = np.zeros(size, bool)
    is_event[event_rows] = True
    codes = np.where(is_event, columns.pop("event"), -1)
    event_ids = names.gather(np.maximum(codes, 0)) if len(names) else pl.Series(np.full(size, None), dtype=pl.Utf8)
    table = pl.DataFrame(columns).with_columns(
        scope=pl.when(pl.Series(is_event)).then(pl.lit("event")).otherwise(pl.lit("month")),
        event_id=pl.when(pl.Series(codes >= 0)).then(event_ids),
        month=pl.lit(month),
    )
    return conform(_figures(table, ["month", "scope", "player_id", "event_id"]), Performance)


def _whole(column: pl.Series) -> np.ndarray:
    """An integer column as int64, 0 where missing (only read where known)."""
    return column.cast(pl.Int64).fill_null(0).to_numpy()


def _by_player_and_event(player: np.ndarray, event: np.ndarray) -> np.ndarray:
    """An order of the sides by player, then event code (-1 first); within one (player, event) any order."""
    span = int(event.max()) + 2
    if len(player) and int(player.min()) >= 0 and int(player.max()) < np.iinfo(np.int64).max // span:
        # One int64 key: NumPy's vectorized sort (np.lexsort of the two keys: 50 ms for 220,000 sides, this 5-10).
        return np.argsort(player * span + (event + 1))
    return np.lexsort((event, player))


# -- one tournament file -----------------------------------------------------------------------


#: The left-out records `ratings performance` names one by one; it counts the others.
MAX_LEFT_OUT = 20


def file_performance(path: str, left_out: list[str] | None = None) -> pl.DataFrame:
    """Per player of a loose TRF / PGN (or CSV / Parquet dump) file: id (null without one), name and figures.

    Ratings are those the file states (TRF player line, PGN WhiteElo/BlackElo); the games are the
    file's games as `ratings validate` sees them (unplayed, unreadable and duplicate records left
    out). A player without a FIDE id is identified by the name written in the file. Players with no
    rated opponent are listed with games 0 and null figures. Raises InputFileError for a file that
    cannot be read or holds no readable record. `left_out`, when given, receives 'line N: problem' for
    each record left out other than an unplayed game (the first MAX_LEFT_OUT, then how many more), so
    that a player whose every game was unreadable does not vanish without a word.
    """
    from pipeline.formats import read_dump
    from pipeline.formats.table_files import InputFileError
    from pipeline.validate.file_report import sniff_format
    from pipeline.validate.identity import LOCAL_ID_BASE
    from pipeline.validate.split import split_month
    from schemas.players import Players
    from schemas.util import empty_frame

    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise InputFileError(f"{path}: cannot be read: {error.strerror or error}") from None
    fmt = sniff_format(data, path)
    if fmt not in READABLE_FORMATS:
        raise InputFileError(f"{path}: not a game file (TRF, PGN, CSV or Parquet); detected: {fmt}")
    raw = read_dump(data, Path(path).name, "", "1970-01")
    if raw["parse_error"].null_count() == 0:
        problem = raw.sort("source_line").select(pl.format("line {}: {}", "source_line", "parse_error")).to_series()
        raise InputFileError(f"{path}: no game could be read" + (f" ({problem[0]})" if len(problem) else ""))

    month = "1970-01"
    # split_month identifies players without an id by name (a local id from the name), as validate does.
    split = split_month(raw.with_columns(pl.lit(month).alias("month")), empty_frame(Players), month, check_month=False)
    games = split.games
    if left_out is not None:
        left_out += _left_out_lines(split.quarantine)
    who = (
        pl.concat(
            [
                *(
                    raw.filter(pl.col("parse_error").is_null()).select(
                        key=pl.col(f"{side}_id"), name=pl.col(f"{side}_name").str.strip_chars()
                    )
                    for side in ("white", "black")
                ),
                split.identities.select(key=pl.col("player_id"), name=pl.col("name").str.strip_chars()),
            ]
        )
        .drop_nulls("key")
        .group_by("key", maintain_order=True)
        .agg(pl.col("name").drop_nulls().first())
        .with_columns(pl.when(pl.col("key") < LOCAL_ID_BASE).then(pl.col("key")).alias("id"))
        .select("key", "id", "name")
    )
    played = pl.concat([games.select(key="white_id"), games.select(key="black_id")]).unique()
    figures = performance_by(performance_sides(games), ["player_id"]).rename({"player_id": "key"})
    return (
        who.join(played, on="key", how="semi")
        .join(figures, on="key", how="left")
        .with_columns(pl.col("games").fill_null(0), pl.col("score").fill_null(0.0))
        .sort(pl.col("performance_fide").is_null(), -pl.col("performance_fide").fill_null(0), pl.col("name"))
        .drop("key")
    )


def _left_out_lines(quarantine: pl.DataFrame) -> list[str]:
    """'line N: problem' for the quarantined records of a file but its unplayed games (which count for nobody), in
    the wording of `ratings validate`'s problem lines: an unreadable record by its detail, another by its reason and
    detail. Validate lists only the records a file's reader could not take (unreadable, or refused for a reason of
    its own); these are every record left out, a duplicate or a result its movetext contradicts too.
    """
    dropped = quarantine.filter(pl.col("reason") != "unplayed").sort("source_line", "detail")
    shown = dropped.head(MAX_LEFT_OUT).select(
        pl.format(
            "line {}: {}",
            "source_line",
            pl.when(pl.col("reason") == "unparseable")
            .then(pl.col("detail"))
            .otherwise(pl.format("{}: {}", "reason", "detail")),
        )
    )
    lines = shown.to_series().to_list()
    if dropped.height > MAX_LEFT_OUT:
        lines.append(f"{dropped.height - MAX_LEFT_OUT:,} more records left out")
    return lines


def file_performance_json(table: pl.DataFrame) -> dict:
    """The `ratings performance --json` object: {"players": [{id, name, games, score, average_opponent,
    performance_fide, performance_400}]}.
    """
    players = []
    for row in table.iter_rows(named=True):
        average = row["average_opponent"]
        players.append(
            {
                "id": row["id"],
                "name": row["name"],
                "games": int(row["games"]),
                "score": float(row["score"]),
                "average_opponent": None if average is None else round(average, 2),
                "performance_fide": row["performance_fide"],
                "performance_400": row["performance_400"],
            }
        )
    return {"players": players}


def file_performance_text(table: pl.DataFrame, path: str) -> str:
    """A readable table of file_performance, best FIDE performance first."""
    from pipeline.text import escape_text

    header = (
        f"{'id':>10}  {'name':<32} {'games':>5} {'score':>5} {'Ra':>7} {'p':>4} {'dp':>4} {'Rp FIDE':>7} {'Rp 400':>6}"
    )
    lines = [
        f"{escape_text(path)}: performance ratings ({table.height} players; ratings as stated in the file)",
        header,
    ]

    def cell(value: object, width: int, spec: str = "") -> str:
        return f"{'-':>{width}}" if value is None else f"{value:>{width}{spec}}"

    for row in table.iter_rows(named=True):
        name = escape_text(row["name"] or "")[:32]
        lines.append(
            f"{cell(row['id'], 10)}  {name:<32} {row['games']:>5} {row['score']:>5g} "
            f"{cell(row['average_opponent'], 7, '.1f')} {cell(row['p'], 4, '.2f')} {cell(row['dp'], 4)} "
            f"{cell(row['performance_fide'], 7)} {cell(row['performance_400'], 6)}"
        )
    return "\n".join(lines)
