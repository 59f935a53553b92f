"""Landing-zone CSV and Parquet games files.

The columns the README lists, Kaggle's names, a header problem said once, colour_known, and repeated games in a file
without rounds kept when the file shows them, else quarantined with a warning that says why. The Kaggle 2011 follow-up
file from ../shared/realdata when it is there.
"""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

import polars as pl
import pytest

from pipeline.formats import read_dumps
from pipeline.formats.tabular import KAGGLE_ALIASES, OPTIONAL, REQUIRED, SCORE, csv_cells, table_records
from pipeline.validate.month_figures import file_warnings, validation_figures
from pipeline.validate.split import split_games, split_month
from schemas import Players, empty_frame

README = Path(__file__).resolve().parents[1] / "README.md"
KAGGLE = Path(__file__).resolve().parents[2] / "shared" / "realdata" / "kaggle2011-followup"
MONTH = "2024-01"


def split(files: dict[str, str | bytes], month: str = MONTH) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(games, quarantine) of the files (name -> content) as one month's dumps of federation GER."""
    dumps = [
        (text.encode() if isinstance(text, str) else text, f"GER/{month}/{name}", "GER") for name, text in files.items()
    ]
    return split_games(pl.concat(read_dumps(dumps, month)), empty_frame(Players), month)


def records(text: str) -> pl.DataFrame:
    """The reader's records of one CSV text, before they become RawGames (colour_known is still there)."""
    return table_records([csv_cells(text)], ["GER/2024-01/games"])


# -- quotes ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ending", ["\n", "\r\n", ""])
def test_a_quote_never_closed_makes_the_rest_of_the_file_one_unparseable_record(ending):
    """The csv module reads end of file inside a quoted field as its end: the last field would swallow the lines after
    it and the record would be one rated game, its lines after it lost.
    """
    lines = [
        "white_id,black_id,result,date,white_name",
        "4600003,4600011,1-0,2024-01-05,x",
        '4600003,4600011,1-0,2024-01-05,"Alpha, Anna',
        "4600003,4600020,0-1,2024-01-05,x",
        "4600011,4600020,1/2-1/2,2024-01-05,y",
    ]
    text = "\n".join(lines) + ending
    games, quarantine = split({"unq.csv": text})
    assert games["source_line"].to_list() == [2]
    assert quarantine.select("source_line", "reason").rows() == [(3, "unparseable")]
    assert quarantine["detail"][0] == (
        "a quote opened on line 3 is never closed, so the record runs to the end of the file (line 5)"
    )
    assert quarantine["raw_text"][0] == "\n".join(lines[2:])
    # A quoted field spanning lines before the open one: the line named is the open quote's.
    text = "\n".join([*lines[:2], '4600011,4600038,1-0,"2024-01-05\n",x', *lines[2:]]) + ending
    _, quarantine = split({"unq.csv": text})
    assert quarantine.select("source_line", "detail").rows() == [
        (5, "a quote opened on line 5 is never closed, so the record runs to the end of the file (line 7)")
    ]
    # Closed quotes, one at the file's very end: every row is read.
    games, quarantine = split({"q.csv": "\n".join([*lines[:2], lines[2] + '"', lines[3], lines[4] + ',"a"']) + ending})
    assert quarantine.height == 1 and quarantine["detail"][0] == "expected 5 fields, found 6"
    assert games["source_line"].to_list() == [2, 3, 4]


def test_a_quote_opened_on_the_last_line_is_named():
    _, quarantine = split({"unq.csv": 'white_id,black_id,result,white_name\n1001,1002,1-0,A\n1003,1004,0-1,"'})
    assert quarantine.select("source_line", "detail").rows() == [
        (3, "a quote opened on line 3 is never closed, so the record runs to the end of the file (line 3)")
    ]


# -- the columns -----------------------------------------------------------------------------------------------


def test_the_readme_lists_every_column_a_games_file_may_have():
    section = README.read_text(encoding="utf-8").split("## Rating your own federation's files", 1)[1]
    section = section.split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z_0-9]+)`", section))
    assert set(REQUIRED + OPTIONAL) <= named
    assert {"MonthID", "Player1", "Player2", "Player1Score"} <= set(re.findall(r"`(\w+)`", section))
    assert set(KAGGLE_ALIASES.values()) <= set(REQUIRED + OPTIONAL)


def test_spellings_with_blanks_and_dashes_are_the_same_column():
    games, quarantine = split({"a.csv": "White ID,Black-ID,Result\n1001,1002,1-0\n"})
    assert games.height == 1 and quarantine.height == 0


# -- a header problem is said once -----------------------------------------------------------------------------


def test_a_wrong_header_is_one_record_of_the_file_not_one_per_row():
    rows = "".join(f"e,{1000 + i},{2000 + i},1\n" for i in range(20))
    games, quarantine = split({"wrong.csv": "event,whiteid,black_id,score\n" + rows})
    assert games.height == 0
    assert quarantine.select("source_line", "reason").rows() == [(1, "unparseable")]
    assert quarantine["detail"][0] == (
        "the header has no column(s) white_id, result (or white_score), so none of its rows is read (columns: event, "
        "whiteid, black_id, score; 'whiteid' for white_id?; a games file needs white_id, black_id and result: README, "
        "'Rating your own federation's files')"
    )


def test_a_semicolon_or_tab_separated_file_is_told_so():
    files = {
        "semicolons.csv": "White ID;Black ID;Result\n1001;1002;1-0\n1003;1004;0-1\n",
        "tabs.csv": '\n"white_id"\t"black_id"\t"result"\r\n1001\t1002\t1-0\r\n',
        "commas.csv": "white_id,black_id,result,note\n1001,1002,1-0,a;b\n",
    }
    games, quarantine = split(files)
    assert games.height == 1
    assert quarantine["source_file"].to_list() == ["GER/2024-01/semicolons.csv", "GER/2024-01/tabs.csv"]
    for (name, line), detail in zip([("semicolons", 1), ("tabs", 2)], quarantine["detail"], strict=True):
        assert detail == (
            f"the header (line {line}) is not comma-separated: it is separated by {name} (columns: white_id, "
            "black_id, result), so none of its rows is read; a games file separates its columns with commas: save it "
            "as CSV with commas (README, 'Rating your own federation's files')"
        )
    # The review's c3.csv: Kaggle's names stand for the required columns, as in a comma-separated file.
    _, quarantine = split({"kaggle.csv": "MonthID;Player1;Player2;Player1Score\n300;1000001;1000002;1\n"})
    assert quarantine["detail"].to_list() == [
        "the header (line 1) is not comma-separated: it is separated by semicolons (columns: monthid, player1, "
        "player2, player1score), so none of its rows is read; a games file separates its columns with commas: save it "
        "as CSV with commas (README, 'Rating your own federation's files')"
    ]


def test_a_file_without_a_header_row_is_told_so():
    _, quarantine = split({"bare.csv": "1001,1002,1-0\n1003,1004,0-1\n"})
    assert quarantine.height == 1
    assert "the first line holds no column names: a games file starts with a header row" in quarantine["detail"][0]


def test_a_parquet_file_without_the_required_columns_is_one_record():
    sink = io.BytesIO()
    pl.DataFrame({"white_id": [1, 2], "black_id": [3, 4]}).write_parquet(sink)
    _, quarantine = split({"short.parquet": sink.getvalue()})
    assert quarantine.height == 1 and quarantine["detail"][0].startswith("the header has no column(s) result")


# -- Kaggle's names, white_score, month, colour_known ----------------------------------------------------------

KAGGLE_ROWS = (
    "STID,MonthID,Player1,Player2,Player1Score,Player1Prev,Player2Prev\n"
    "2500001,85,10084,23785,0.0,0,20\n"
    "2500002,85,10084,38486,0.5,0,6\n"
    "2500003,85,10084,38486,0.5,0,6\n"  # the same pairing and score again, another STID: another game
    "2500004,86,10084,41303,1.0,0,13\n"  # February 2006: not this folder's month
    "2500005,85,10084,41303,2,0,13\n"
)


def test_kaggle_names_are_read_as_evaluate_reads_them():
    games, quarantine = split({"kaggle.csv": KAGGLE_ROWS}, month="2006-01")  # MonthID 85 = 2006-01 (1 = 1999-01)
    assert games.select("white_id", "black_id", "white_score").rows() == [
        (10084, 23785, 0.0),
        (10084, 38486, 0.5),
        (10084, 38486, 0.5),
    ]
    assert quarantine.select("source_line", "reason", "detail").rows() == [
        (5, "future", "event starts 2006-02-01, after 2006-01: the month its dump was reported for"),
        (6, "unparseable", "white_score '2' is not 1, 0.5 or 0"),
    ]
    # Kaggle's Player1 need not be White: without a colour_known column such a file's colours are unknown.
    assert records(KAGGLE_ROWS)["colour_known"].unique().to_list() == [False]


def test_month_white_score_and_colour_known_columns():
    text = (
        "month,white_id,black_id,white_score,result,colour_known,date\n"
        "2024-01,1,2,1,,true,2024-01-31\n"
        "2024-01,1,3,0.5,1/2-1/2,no,\n"
        "2024-1,1,4,0,,,\n"
        "2024-01,1,5,0,1-0,false,\n"
        "2024-01,1,6,1,,maybe,\n"
        "2024-01,1,7,1,,,2024-02-01\n"
        "85,1,8,1,,,2006-02-03\n"
    )
    read = records(text)
    assert read["result"].to_list() == ["1-0", "1/2-1/2", "0-1", "1-0", "1-0", "1-0", "1-0"]
    assert read["colour_known"].to_list() == [True, False, True, False, None, True, True]
    assert read["parse_error"].to_list() == [
        None,
        None,
        "month '2024-1' is neither YYYY-MM nor a Kaggle MonthID (a whole number from 1 = 1999-01)",
        "result '1-0' and white_score '0' disagree",
        "colour_known 'maybe' is not true or false",
        "month '2024-01' and date '2024-02-01' disagree",
        "month '85' and date '2006-02-03' disagree",
    ]
    assert read["event_start"].cast(pl.Utf8).to_list()[:2] == ["2024-01-01", "2024-01-01"]
    assert SCORE in OPTIONAL and "colour_known" in OPTIONAL


# -- repeated games in a file without rounds -------------------------------------------------------------------


def test_identical_rows_without_round_or_date_are_copies_with_a_warning_that_says_why():
    text = "white_id,black_id,result\n1001,1002,1-0\n1001,1002,1-0\n1003,1004,0-1\n1001,1002,1-0\n"
    games, quarantine = split({"club.csv": text})
    assert games.height == 2
    assert quarantine.select("source_line", "reason").rows() == [(3, "duplicate"), (5, "duplicate")]
    assert quarantine["detail"][0] == (
        "same game as GER/2024-01/club.csv:2: the file repeats this row and gives no round or date, so a second game "
        "of the same players cannot be told from a copy; add a round (or game number) or a date column to have such "
        "games rated"
    )
    assert file_warnings(quarantine) == [
        "GER/2024-01/club.csv: 2 row(s) repeat an earlier row of the file and are quarantined as duplicate: without a "
        "round or date a second game of the same players cannot be told from a copy; add a round (or game number) or "
        "date column to have them rated"
    ]
    figures = validation_figures(5, games, quarantine, pl.DataFrame({"status": []}, schema={"status": pl.Utf8}))
    assert figures["quarantine"]["file_warnings"] == file_warnings(quarantine)[0]


def test_the_ui_shows_a_file_warnings_file_name_with_its_controls_escaped():
    text = "white_id,black_id,result\n1001,1002,1-0\n1001,1002,1-0\n"
    games, quarantine = split({"club\u202e\nvsc.csv": text})
    figures = validation_figures(3, games, quarantine, pl.DataFrame({"status": []}, schema={"status": pl.Utf8}))
    # One warning on one line, the bidi override and the line break in the name shown, not acted on.
    assert str(figures["quarantine"]["file_warnings"]).startswith("GER/2024-01/club\\u202e\\x0avsc.csv: 1 row(s)")


def test_dated_identical_rows_without_round_say_to_add_a_round():
    text = "date,white_id,black_id,result\n2024-01-05,1001,1002,1-0\n2024-01-05,1001,1002,1-0\n"
    _, quarantine = split({"blitz.csv": text})
    assert "on the same day and gives no round" in quarantine["detail"][0]
    assert "round (or game number) column" in file_warnings(quarantine)[0]


def test_rows_the_file_tells_apart_are_separate_games():
    numbered = "game,white_id,black_id,result\n1,1001,1002,1/2-1/2\n2,1001,1002,1/2-1/2\n3,1001,1002,1/2-1/2\n"
    # A match with colours alternating: identical rows, but the players meet with both colours in the file.
    match = "white_id,black_id,result\n1001,1002,1-0\n1002,1001,1-0\n1001,1002,1-0\n1002,1001,1/2-1/2\n"
    for name, text, rated in (("numbered.csv", numbered, 3), ("match.csv", match, 4)):
        games, quarantine = split({name: text})
        assert (games.height, quarantine.height) == (rated, 0), name
    # Blanks and quotes do not make another game.
    _, quarantine = split({"spaced.csv": 'white_id,black_id,result\n1001,1002,1-0\n 1001 ,"1002",1-0\n'})
    assert quarantine["reason"].to_list() == ["duplicate"]


def test_a_file_sent_twice_is_a_copy_game_for_game():
    numbered = "game,white_id,black_id,result\n1,1001,1002,1-0\n2,1001,1002,1-0\n"
    games, quarantine = split({"match.csv": numbered, "match (2).csv": numbered})
    assert games["source_file"].to_list() == ["GER/2024-01/match.csv"] * 2
    assert quarantine.select("source_line", "detail").rows() == [
        (2, "same game as GER/2024-01/match.csv:2"),
        (3, "same game as GER/2024-01/match.csv:3"),
    ]
    assert file_warnings(quarantine) == []


def test_a_first_game_is_still_the_same_game_in_another_format_and_rounds_are_as_before():
    pgn = '[Event "x"]\n[White "A"]\n[Black "B"]\n[Result "1-0"]\n[WhiteFideId "1001"]\n[BlackFideId "1002"]\n\n1-0\n'
    numbered = "game,white_id,black_id,result\n1,1001,1002,1-0\n2,1001,1002,1-0\n"
    games, quarantine = split({"a.csv": numbered, "b.pgn": pgn})
    assert (games.height, quarantine["source_file"].to_list()) == (2, ["GER/2024-01/b.pgn"])
    rounds = "round,white_id,black_id,result\n1,1001,1002,1-0\n1,1001,1002,1-0\n2,1001,1002,1-0\n"
    games, quarantine = split({"rounds.csv": rounds})
    assert (games.height, quarantine["detail"].to_list()) == (2, ["same game as GER/2024-01/rounds.csv:2"])


def test_kaggle_2011_month_85_is_rated_whole(tmp_path: Path):
    """FIDE's games of January 2006 (the Kaggle 2011 follow-up file's MonthID 85): every row has its own STID, so
    the 305 repeated pairings with the same score are separate games, not duplicates.
    """
    source = KAGGLE / "followup_secondary_training.csv.gz"
    if not source.exists():
        pytest.skip(f"{source} is absent (shared/realdata not mounted)")
    month = pl.read_csv(gzip.decompress(source.read_bytes())).filter(pl.col("MonthID") == 85)
    repeated = month.height - month.unique(["Player1", "Player2", "Player1Score"]).height
    assert (month.height, repeated) == (2_673, 305)
    sink = io.StringIO()
    month.write_csv(sink)
    dumps = [(sink.getvalue().encode(), "KAG/2006-01/followup.csv", "KAG")]
    result = split_month(pl.concat(read_dumps(dumps, "2006-01")), empty_frame(Players), "2006-01")
    assert (result.games.height, result.quarantine.height) == (2_673, 0)
