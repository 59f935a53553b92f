"""Tunable constants of the synthetic federation: population, activity, results model and dirty-record rates."""

from __future__ import annotations

# -- federations and their dump formats ----------------------------------------------------------
FEDERATIONS: tuple[str, ...] = ("ENG", "GER", "NOR")
FEDERATION_WEIGHTS: tuple[float, ...] = (0.35, 0.45, 0.20)
DUMP_FORMAT: dict[str, str] = {"ENG": "pgn", "GER": "trf", "NOR": "csv"}
# FIDE ids grow with registration date from a per-federation base (7-8 digits); the bases are far
# enough apart that federations never collide for populations up to a few hundred thousand.
ID_BASE: dict[str, int] = {"ENG": 2_400_000, "GER": 4_600_000, "NOR": 15_000_000}
ID_MAX_GAP = 9

# -- population ----------------------------------------------------------------------------------
INITIAL_SHARE = 0.5            # share of the population that exists in the first month
INFLUX_GROWTH_PER_YEAR = 0.10  # newcomer influx grows linearly by this fraction of its first-year level per year
EXIT_HAZARD_PER_MONTH = 0.004  # players stop existing (quit) at this monthly rate
FEMALE_SHARE = 0.12
INITIAL_JUNIOR_SHARE = 0.30    # of the players present at start
NEWCOMER_JUNIOR_SHARE = 0.65   # of the players entering later
INITIAL_RATED_SHARE_ADULT = 0.90
INITIAL_RATED_SHARE_JUNIOR = 0.60
RATING_FLOOR = 1000            # below this a seed rating is not published (the player stays unrated)

# Strength model: s(age) = P - (P - S7) * exp(-(age - 7) / tau) - DECLINE * max(0, age - 50)^2 + AR(1) form.
STRENGTH_AT_AGE_7 = (750.0, 100.0)               # mean, sd
POTENTIAL_INITIAL_ADULT = (1750.0, 320.0)
POTENTIAL_JUNIOR = (1850.0, 300.0)
POTENTIAL_NEWCOMER_ADULT = (1500.0, 280.0)
POTENTIAL_RANGE = (900.0, 2800.0)
JUNIOR_TAU_YEARS = (3.0, 5.0)                    # uniform range of the improvement time constant
SENIOR_DECLINE = 0.3                             # Elo per (year past 50) squared
FORM_AR = 0.9                                    # monthly persistence of form fluctuations
FORM_SHOCK_SD = 15.0                             # monthly shock; stationary sd ~ 34
PAIRING_BIAS_SD = 60.0                           # how far a player's "known" strength is off
PAIRING_LAG_MONTHS = 3                           # the strength organisers know is this many months old

# -- activity --------------------------------------------------------------------------------------
ACTIVITY_MEAN = 0.13           # event entries per player-month (before age and season factors)
ACTIVITY_SIGMA = 0.9           # lognormal spread: a few players play most events
JUNIOR_ACTIVITY_FACTOR = 1.5
SENIOR_ACTIVITY_FACTOR = 0.6   # age over 70
# Calendar-month factors: summer festivals, quiet December.
SEASON_FACTOR = (1.0, 0.95, 1.0, 1.05, 1.0, 0.95, 1.3, 1.3, 1.0, 1.0, 0.95, 0.75)
FOREIGN_PLAY_RATE = 0.04       # entries in an event hosted by another federation

# -- events ----------------------------------------------------------------------------------------
MAX_ROUNDS = 9
SWISS_SIZE = (20, 120)
SWISS_SIZE_LOG_MEAN_SD = (3.8, 0.5)              # lognormal size, median ~45
SWISS_ROUNDS = (5, 6, 7, 8, 9)
SWISS_ROUNDS_WEIGHTS = (0.30, 0.10, 0.30, 0.05, 0.25)
SWISS_SPAN_DAYS = {5: 3, 6: 3, 7: 5, 8: 6, 9: 9}  # days from first to last round + 1
ROUND_ROBIN_SLOT_SHARE = 0.10                     # share of entries that go to round robins
ROUND_ROBIN_SIZES = (8, 9, 10)
MIN_EVENT_SIZE = 4                                # smaller leftovers (tiny populations) are dropped
RAPID_EVENT_SHARE_CSV = 0.10                      # CSV dumps only: a few rapid Swiss events
CLASSICAL_TC = (5400, 30)
RAPID_TC = (900, 10)

# -- results model ---------------------------------------------------------------------------------
WHITE_ADVANTAGE = 35.0
LOGISTIC_SCALE = 400.0
DRAW_PEAK_AT_1200 = 0.12       # draw probability of an even game at level 1200 ...
DRAW_PEAK_SLOPE = 0.0004       # ... rising by this per Elo of the pair's mean strength
DRAW_PEAK_RANGE = (0.08, 0.65)
DRAW_WIDTH = 350.0             # draws fall off as exp(-(diff / width)^2)

# -- dirty records ---------------------------------------------------------------------------------
FORFEIT_RATE = 0.006           # of pairings: TRF +/-, PGN without moves and Termination "forfeit"
HALF_POINT_BYE_RATE = 0.012    # per Swiss entry and round (TRF H)
ZERO_POINT_BYE_RATE = 0.006    # per Swiss entry and round (TRF Z)
WITHDRAWAL_RATE = 0.03         # per Swiss entry: leaves after a random round (TRF blank result)
FULL_POINT_BYE_EVENT_SHARE = 0.15  # events that give F instead of U to the odd player out
DUPLICATE_FILE_RATE = 0.01     # TRF/PGN event files submitted twice under another name
ID_TYPO_RATE = 0.003           # CSV games: one side's id mistyped (not in the registry)
DATE_OUTSIDE_MONTH_RATE = 0.002  # CSV/PGN games dated one month early
