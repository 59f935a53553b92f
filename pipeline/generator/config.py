"""Tunable constants of the synthetic federation.

Scale presets, population, events, results model and dirty-record rates.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Federation:
    """One organising federation: its share of the players, the format of its dumps and its id range."""

    code: str
    weight: float
    dump_format: str  # "trf", "pgn", "csv" or "parquet"
    id_base: int  # ids grow with registration from here (7-8 digits, ranges far apart)


# -- federations and their dump formats ------------------------------------------------------------
# The demo's three federations, one per text format (what `ratings demo` has always shown).
DEMO_FEDERATIONS: tuple[Federation, ...] = (
    Federation("ENG", 0.35, "pgn", 2_400_000),
    Federation("GER", 0.45, "trf", 4_600_000),
    Federation("NOR", 0.20, "csv", 15_000_000),
)
# FIDE scale: the same three, small, plus bulk federations that deliver Parquet. About 15 % of the
# games are TRF/PGN, so the text parsers get real work without the landing zone growing to tens of GB.
FIDE_FEDERATIONS: tuple[Federation, ...] = (
    Federation("ENG", 0.04, "pgn", 2_400_000),
    Federation("GER", 0.10, "trf", 4_600_000),
    Federation("NOR", 0.04, "csv", 15_000_000),
    Federation("FRA", 0.12, "parquet", 20_000_000),
    Federation("ESP", 0.14, "parquet", 22_000_000),
    Federation("IND", 0.40, "parquet", 25_000_000),
    Federation("USA", 0.16, "parquet", 45_000_000),
)
FEDERATIONS: tuple[str, ...] = tuple(f.code for f in DEMO_FEDERATIONS)  # the default data set's
ID_MAX_GAP = 9
DUMP_FORMATS = ("trf", "pgn", "csv", "parquet")

# -- scale presets -----------------------------------------------------------------------------------
# `players` counts everybody who exists at some point of the span (registered at start or later).
# The pool follows the real FIDE pool's growth (POOL_SIZE_BY_YEAR); `players` only scales it.
SCALES: dict[str, dict] = {
    # The `ratings demo` data set: ten years, tens of thousands of players.
    "small": dict(seed=2024, players=30_000, start="2015-01", end="2024-12", federations=DEMO_FEDERATIONS),
    # A tenth of the FIDE pool over the same span: for experiments that rate every month.
    "medium": dict(seed=2024, players=90_000, start="2008-01", end="2024-12", federations=FIDE_FEDERATIONS),
    # The real pool's size: ~100,000 players in 2011, ~400,000 in 2023, 1-2 M games a year.
    "fide": dict(seed=2024, players=900_000, start="2008-01", end="2024-12", federations=FIDE_FEDERATIONS),
}
DEFAULT_SCALE = "small"
BLOCK_MONTHS = 12  # events are scheduled, paired and written a year at a time (bounded memory)

# -- population ----------------------------------------------------------------------------------------
# Existing players by calendar year (the pool the players number is spread over), shaped on the
# FIDE list: about 100,000 in 2011 and 400,000 in 2023. Only the shape matters; `players` scales it.
POOL_SIZE_BY_YEAR = ((2008.0, 70_000), (2011.0, 100_000), (2017.0, 200_000), (2023.0, 400_000), (2025.0, 470_000))
# Monthly exit hazards by life stage at registration (juniors try chess and drop out more often).
EXIT_HAZARD_JUNIOR = 0.012
EXIT_HAZARD_ADULT = 0.006
EXIT_HAZARD_SENIOR = 0.012  # registered at 65 or older
EXIT_HAZARD_MEAN = 0.009  # used to turn pool growth into an influx
FEMALE_SHARE = 0.12
# Calendar-year tables (year, value), interpolated linearly: the pool gets younger and its entrants
# weaker, as FIDE's did when national events at ever lower levels became rated.
INITIAL_JUNIOR_SHARE_BY_YEAR = ((2008.0, 0.25), (2024.0, 0.45))  # of the players present at start
NEWCOMER_JUNIOR_SHARE_BY_YEAR = ((2008.0, 0.70), (2024.0, 0.90))  # of the players registering later
NEWCOMER_ADULT_POTENTIAL_BY_YEAR = ((2008.0, 1650.0), (2024.0, 1550.0))
NEWCOMER_ADULT_POTENTIAL_SD = 250.0
# Junior newcomers' age at registration, uniform between these bounds (by year): ever younger.
JUNIOR_ENTRY_AGE_BY_YEAR = (((2008.0, 9.0), (2024.0, 6.0)), ((2008.0, 16.0), (2024.0, 12.0)))
INITIAL_JUNIOR_AGE = (8.0, 19.0)  # uniform, juniors present at start
INITIAL_RATED_SHARE_ADULT = 0.90
INITIAL_RATED_SHARE_JUNIOR = 0.60
# The rule set whose floor the seed list keeps (population.seed_list_rules): FIDE's, as it was in force.
SEED_LIST_RULES = "fide-historical"
SEED_LIST_NOISE_SD = 50.0  # seed ratings = strength + noise (juniors also lag behind)
SEED_LIST_JUNIOR_LAG = 40.0

# Strength model: s(age) = P - (P - S7) * exp(-(age - 7) / tau) - DECLINE * max(0, age - 50)^2 + AR(1) form:
# beginners improve fastest (hundreds of Elo a year), which the rating system cannot follow.
STRENGTH_AT_AGE_7 = (400.0, 100.0)  # mean, sd
POTENTIAL_INITIAL_ADULT = (1750.0, 320.0)
POTENTIAL_JUNIOR = (1650.0, 280.0)
POTENTIAL_RANGE = (900.0, 2800.0)
JUNIOR_TAU_YEARS = (1.0, 6.0)  # uniform range of the improvement time constant
SENIOR_DECLINE = 0.3  # Elo per (year past 50) squared
FORM_AR = 0.9  # monthly persistence of form fluctuations
FORM_SHOCK_SD = 18.0  # monthly shock; stationary sd ~ 41
PAIRING_BIAS_SD = 60.0  # how far a player's "known" strength is off
PAIRING_LAG_MONTHS = 3  # the strength organisers know is this many months old
JUNIOR_AGE_BELOW = 20.0  # a junior, for activity and junior events

# -- activity --------------------------------------------------------------------------------------
ACTIVITY_MEAN = 0.15  # event entries per player-month (before age and season factors)
ACTIVITY_SIGMA = 0.9  # lognormal spread: a few players play most events
JUNIOR_ACTIVITY_FACTOR = 1.0
SENIOR_ACTIVITY_FACTOR = 0.6  # age over 70
# Calendar-month factors: summer festivals, quiet December.
SEASON_FACTOR = (1.0, 0.95, 1.0, 1.05, 1.0, 0.95, 1.3, 1.3, 1.0, 1.0, 0.95, 0.75)
FOREIGN_PLAY_RATE = 0.04  # entries in an event hosted by another federation

# -- events ----------------------------------------------------------------------------------------
# Event kinds, decided per entry. Juniors often play junior-only events (age-group championships,
# school leagues); the rest enter team leagues, round robins, rating-restricted sections (players
# of similar rating) or opens (everybody).
JUNIOR_EVENT_SHARE = 0.40  # of juniors' entries
TEAM_SHARE = 0.08
ROUND_ROBIN_SHARE = 0.06
SECTION_SHARE = 0.40
# Sections, round robins and team divisions gather the entries of one rating band (of the organisers'
# estimate): a fixed width in Elo, so an event's spread does not depend on the population size.
SECTION_BAND_WIDTH = 300
ROUND_ROBIN_BAND_WIDTH = 200
TEAM_BAND_WIDTH = 400
MAX_ROUNDS = 9
SWISS_SIZE = (20, 120)
SWISS_SIZE_LOG_MEAN_SD = (3.8, 0.5)  # lognormal size, median ~45
SWISS_ROUNDS = (5, 6, 7, 8, 9)
SWISS_ROUNDS_WEIGHTS = (0.30, 0.10, 0.30, 0.05, 0.25)
SWISS_SPAN_DAYS = {5: 3, 6: 3, 7: 5, 8: 6, 9: 9}  # days from first to last round + 1
ROUND_ROBIN_SIZES = (8, 9, 10)
TEAM_COUNTS = (6, 8, 10)  # teams per team event (a round robin of teams)
TEAM_BOARDS = (4, 6, 8)
MIN_EVENT_SIZE = 4  # smaller leftovers (tiny populations) are dropped
# Time controls of Swiss events (round robins and team events are classical).
RAPID_EVENT_SHARE = 0.10
BLITZ_EVENT_SHARE = 0.05
RAPID_ROUNDS = (7, 9)
BLITZ_ROUNDS = 9
CLASSICAL_TC = (5400, 30)
RAPID_TC = (900, 10)
BLITZ_TC = (180, 2)

# -- results model ---------------------------------------------------------------------------------
WHITE_ADVANTAGE = 35.0
LOGISTIC_SCALE = 400.0
# Faster games are more random: the strength difference counts for less, and fewer games are drawn.
TC_DIFFERENCE_FACTOR = {"classical": 1.0, "rapid": 0.85, "blitz": 0.75}
TC_DRAW_FACTOR = {"classical": 1.0, "rapid": 0.8, "blitz": 0.6}
DRAW_PEAK_AT_1000 = 0.10  # draw probability of an even game at level 1000 ...
DRAW_PEAK_SLOPE = 0.00026  # ... rising by this per Elo of the pair's mean strength (2000: 0.36, 2700: 0.54)
DRAW_PEAK_RANGE = (0.05, 0.60)
DRAW_WIDTH = 350.0  # draws fall off as exp(-(diff / width)^2)

# -- dirty records ---------------------------------------------------------------------------------
FORFEIT_RATE = 0.006  # of pairings: TRF +/-, PGN without moves, CSV/Parquet result +- / -+
HALF_POINT_BYE_RATE = 0.012  # per Swiss entry and round (TRF H)
ZERO_POINT_BYE_RATE = 0.006  # per Swiss entry and round (TRF Z)
WITHDRAWAL_RATE = 0.03  # per Swiss entry: leaves after a random round (TRF blank result)
FULL_POINT_BYE_EVENT_SHARE = 0.15  # events that give F instead of U to the odd player out
DUPLICATE_FILE_RATE = 0.01  # events submitted twice (TRF/PGN: another file name; CSV/Parquet: a resubmission file)
ID_TYPO_RATE = 0.003  # CSV/Parquet games: one side's id mistyped (not in the registry)
DATE_OUTSIDE_MONTH_RATE = 0.002  # CSV/Parquet/PGN games dated one month early
# Tournaments filed for a later list than the first they could reach (FIDE's calendar, pipeline/rules/calendar.py):
# one or two months late (rated: within the third list after the end), and a few three or four months late (too late).
LATE_REPORT_RATE = 0.02
TOO_LATE_REPORT_RATE = 0.002
