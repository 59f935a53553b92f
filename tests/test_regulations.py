"""One home for every rule: the RuleSet's knobs are read by pipeline/rules/regulations.py only, each described, each
clause documented.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from pipeline.rules import regulations
from pipeline.rules.model import InitialRating, KPolicy, RuleSet, load_rules

ROOT = Path(__file__).resolve().parents[1]
# Knobs of the rating arithmetic (name, list frequency and inactivity are bookkeeping the engine does).
RULE_KNOBS = (
    "expectancy",
    "scale",
    "kappa",
    "sonas_intercept",
    "sonas_slope",
    "sonas_clamp",
    "k_games_cap",
    "cap_difference",
    "cap_mode",
    "cap_exempt_from",
    "floor",
    "weights",
    "weights_by_minutes",
)
# Files that may name a knob: its model, its one home, and the generated docs that describe it.
ALLOWED = {"pipeline/rules/model.py", "pipeline/rules/regulations.py", "pipeline/rules/doc.py"}


@pytest.mark.parametrize("model", [RuleSet, KPolicy, InitialRating])
def test_every_rule_set_field_says_what_it_is(model):
    assert [name for name, field in model.model_fields.items() if not field.description] == []


def test_the_rule_knobs_are_read_in_one_place():
    readers = {}
    for path in sorted((ROOT / "pipeline").rglob("*.py")) + sorted((ROOT / "assets").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        for knob in RULE_KNOBS:
            if relative not in ALLOWED and re.search(rf"\brules\.{knob}\b", text):
                readers.setdefault(knob, []).append(relative)
    assert readers == {}


def test_every_function_of_the_regulations_names_its_source():
    public = [
        getattr(regulations, name)
        for name in dir(regulations)
        if callable(getattr(regulations, name))
        and getattr(getattr(regulations, name), "__module__", "") == regulations.__name__
        and not name.startswith("_")
    ]
    assert len(public) >= 10
    for function in public:
        assert function.__doc__, function.__name__
    documented = (ROOT / "docs" / "regulations.md").read_text(encoding="utf-8")
    for function in public:
        if function.__name__ not in ("describe_rating_difference",):
            assert function.__name__ in documented, (
                f"docs/regulations.md does not say where {function.__name__} applies"
            )


# One line per clause, values worked by hand (the scalachess way).
def frame(**columns) -> pl.DataFrame:
    return pl.DataFrame(columns)


def test_400_point_rule_every_game():
    assert (
        frame(own_rating=[2500], opponent_rating=[2000]).select(regulations.rating_difference(load_rules("fide-2024")))[
            0, 0
        ]
        == 400
    )


def test_350_point_rule_before_july_2009():
    assert (
        frame(own_rating=[2500], opponent_rating=[2000]).select(regulations.rating_difference(load_rules("fide-2008")))[
            0, 0
        ]
        == 350
    )


def test_2650_exemption_from_october_2025_is_one_sided():
    rules = load_rules("fide-2025-10")
    top = frame(own_rating=[2813], opponent_rating=[2400]).select(regulations.rating_difference(rules))[0, 0]
    other = frame(own_rating=[2400], opponent_rating=[2813]).select(regulations.rating_difference(rules))[0, 0]
    assert (top, other) == (413, -400)


def test_table_8_1_2_expected_score_for_400_points_is_92_hundredths():
    assert frame(d=[400]).select(regulations.expected_score(load_rules("fide-2024")))[0, 0] == 92.0


def test_k_times_n_cap_700():  # K 40, 20 games: 40 x 20 = 800 > 700, so K = 700 // 20 = 35
    assert (
        frame(n=[20]).select(regulations.k_times_games_cap(pl.lit(40), pl.col("n"), load_rules("fide-2024")))[0, 0]
        == 35
    )


def test_rounding_half_away_from_zero():
    assert frame(x=[2.5, -2.5, 2.49]).select(regulations.round_half_away(pl.col("x")))["x"].to_list() == [3, -3, 2]


def test_first_rating_2024_two_hypothetical_draws_against_1800():
    # 5 games against 2000 average, 2.5 points: with the two draws n 7, 3.5 points, Ra (10000 + 3600) / 7
    # = 1942.86, p 0.50 -> dp 0, Ru = round(1942.86) = 1943.
    pooled = frame(n_pool=[5], p2_pool=[5], os_pool=[10_000])
    assert pooled.select(regulations.initial_rating(load_rules("fide-2024")))[0, 0] == 1943


def test_floor_1400_in_2024_none_for_plain_elo():
    ratings = frame(rating=[1399, 1400])
    assert ratings.select(regulations.below_floor(pl.col("rating"), load_rules("fide-2024")))["rating"].to_list() == [
        True,
        False,
    ]
    assert ratings.select(regulations.below_floor(pl.col("rating"), load_rules("elo-32")).alias("x"))[
        "x"
    ].to_list() == [False]
