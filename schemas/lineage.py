"""Column-level lineage as data: which upstream columns each stored table's columns come from."""

from __future__ import annotations

# table -> column -> [(upstream table, column)]. Upstream names without a scenario prefix are the
# shared tables (raw_games, games); scenario tables are resolved within the same scenario.
SHARED_TABLES = {"raw_games", "games", "quarantine"}
_SAME = {"source_file": "source_file", "source_line": "source_line", "month": "month", "federation": "federation"}
COLUMN_LINEAGE: dict[str, dict[str, list[tuple[str, str]]]] = {
    "games": {
        "game_id": [("raw_games", "record_id")],
        "event_id": [("raw_games", "event_id")],
        "event_start": [
            ("raw_games", "event_start"),
            ("raw_games", "date"),
            ("raw_games", "date_from"),
            ("raw_games", "date_to"),
        ],
        "date": [("raw_games", "date")],
        "round": [("raw_games", "round")],
        "white_id": [("raw_games", "white_id"), ("raw_games", "white_name")],
        "black_id": [("raw_games", "black_id"), ("raw_games", "black_name")],
        "white_score": [("raw_games", "result")],
        "time_control": [("raw_games", "time_control")],
        "tc_base_seconds": [("raw_games", "tc_base_seconds")],
        "tc_increment_seconds": [("raw_games", "tc_increment_seconds")],
        "white_rating_used": [("raw_games", "white_rating")],
        "black_rating_used": [("raw_games", "black_rating")],
        "colour_known": [("raw_games", "colour_known")],
        # The federation folders of the game's copies quarantined as its duplicates.
        "also_reported_by": [("raw_games", "federation")],
        **{column: [("raw_games", source)] for column, source in _SAME.items()},
    },
    "quarantine": {
        "record_id": [("raw_games", "record_id")],
        "raw_text": [("raw_games", "raw_text")],
        "reason": [
            ("raw_games", "parse_error"),
            ("raw_games", "unplayed"),
            ("raw_games", "result"),
            ("raw_games", "white_id"),
            ("raw_games", "black_id"),
            ("raw_games", "date"),
        ],
        **{column: [("raw_games", source)] for column, source in _SAME.items()},
    },
    "rated_games": {
        **{
            column: [("games", column)]
            for column in ("game_id", "month", "event_id", "white_id", "black_id", "white_score", "time_control")
        },
        "white_rating_used": [("games", "white_rating_used"), ("rating_list", "rating")],
        "black_rating_used": [("games", "black_rating_used"), ("rating_list", "rating")],
        "white_expected": [("games", "white_rating_used"), ("games", "black_rating_used"), ("rating_list", "rating")],
        "black_expected": [("games", "white_rating_used"), ("games", "black_rating_used"), ("rating_list", "rating")],
        "weight": [("games", "time_control"), ("games", "tc_base_seconds"), ("games", "tc_increment_seconds")],
    },
    "rating_list": {
        "player_id": [("rating_list", "player_id"), ("games", "white_id"), ("games", "black_id")],
        "rating": [
            ("rating_list", "rating"),
            ("games", "white_score"),
            ("games", "white_rating_used"),
            ("games", "black_rating_used"),
        ],
        "change": [("rating_list", "rating"), ("rating_list", "k"), ("games", "white_score")],
        "games": [("games", "white_id"), ("games", "black_id")],
        "games_total": [("rating_list", "games_total"), ("games", "white_id"), ("games", "black_id")],
        "birth_year": [("rating_list", "birth_year")],
        "pending": [
            ("rating_list", "pending"),
            ("games", "white_score"),
            ("games", "white_rating_used"),
            ("games", "black_rating_used"),
        ],
    },
    "crosstable": {
        "band": [("rated_games", "white_rating_used"), ("rated_games", "black_rating_used")],
        "opponent_band": [("rated_games", "white_rating_used"), ("rated_games", "black_rating_used")],
        "games": [("rated_games", "game_id")],
        "score": [("rated_games", "white_score")],
        "expected": [("rated_games", "white_expected"), ("rated_games", "black_expected")],
    },
}
