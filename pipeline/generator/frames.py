"""Polars views of one simulated block: one row per paired game, with ids, result, time control and dates."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipeline.generator.events import TC_SECONDS, TIME_CONTROLS, Schedule
from pipeline.generator.pairing import Crosstable
from pipeline.generator.population import Population

# White's TRF result code -> result text (forfeits in the CSV readers' +- / -+ notation) and score.
RESULT_TEXT = {ord("1"): "1-0", ord("="): "1/2-1/2", ord("0"): "0-1", ord("+"): "+-", ord("-"): "-+"}
WHITE_SCORE = {ord("1"): 1.0, ord("="): 0.5, ord("0"): 0.0}


def games_frame(pop: Population, schedule: Schedule, table: Crosstable, first_absolute_month: int) -> pl.DataFrame:
    """Every paired game of the block (played and forfeited), in event, round, board order.

    Columns: event (index in the schedule), month (from the data set's first month), host, round
    (1-based), board (1-based within the round), white/black entry and player indices, white_id,
    black_id, code (White's TRF code), played, white_score (null for forfeits), time_control,
    tc_base_seconds, tc_increment_seconds, event_start, date, white_rating/black_rating (stated, or null).
    """
    s = schedule
    event = s.entry_event[table.game_white]
    white_player = s.entry_player[table.game_white]
    black_player = s.entry_player[table.game_black]
    tc = s.time_control[event].astype(np.int64)
    absolute = first_absolute_month + s.month[event].astype(np.int64)
    rounds = table.game_round.astype(np.int64)
    day = s.start_day[event] + (rounds * s.span_days[event]) // s.rounds[event]
    frame = pl.DataFrame(
        {
            "event": event,
            "month": s.month[event],
            "host": s.host[event],
            "round": (rounds + 1).astype(np.int32),
            "white_entry": table.game_white,
            "black_entry": table.game_black,
            "white_player": white_player,
            "black_player": black_player,
            "white_id": pop.player_id[white_player],
            "black_id": pop.player_id[black_player],
            "code": table.game_code,
            "played": table.played,
            "tc": tc.astype(np.int8),
            "tc_base_seconds": np.array([b for b, _ in TC_SECONDS], dtype=np.int32)[tc],
            "tc_increment_seconds": np.array([i for _, i in TC_SECONDS], dtype=np.int32)[tc],
            "y": absolute // 12,
            "m": absolute % 12 + 1,
            "start_day": s.start_day[event],
            "day": day,
            "white_stated": s.entry_stated_rating[table.game_white],
            "black_stated": s.entry_stated_rating[table.game_black],
        }
    )
    return frame.with_columns(
        pl.int_range(pl.len()).over("event", "round").add(1).cast(pl.Int32).alias("board"),
        pl.col("code").replace_strict(WHITE_SCORE, default=None, return_dtype=pl.Float64).alias("white_score"),
        pl.col("tc").replace_strict(dict(enumerate(TIME_CONTROLS)), return_dtype=pl.Utf8).alias("time_control"),
        pl.date("y", "m", "start_day").alias("event_start"),
        pl.date("y", "m", "day").alias("date"),
        *(
            pl.when(pl.col(f"{side}_stated") > 0).then(pl.col(f"{side}_stated")).cast(pl.Int32).alias(f"{side}_rating")
            for side in ("white", "black")
        ),
    ).drop("y", "m", "start_day", "day", "white_stated", "black_stated")


def engine_games(games: pl.DataFrame, event_ids: list[str]) -> pl.DataFrame:
    """The played games in the engine's input layout (month, event_id, event_start, white_id, black_id,
    white_score, time_control), as validation hands them over from clean dumps.
    """
    played = games.filter(pl.col("played"))
    ids = np.asarray(event_ids, dtype=object)[played["event"].to_numpy()]
    return played.select(
        "month",
        pl.Series("event_id", ids, dtype=pl.Utf8),
        "event_start",
        "white_id",
        "black_id",
        "white_score",
        "time_control",
    )
