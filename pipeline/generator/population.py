"""The synthetic player population: identities, entry and exit months, monthly true strength, seed list."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.generator import config as C
from pipeline.generator.names import player_names
from pipeline.months import month_from_index
from pipeline.rules.model import RuleSet, resolve_rules
from pipeline.rules.regulations import _below_floor_numpy


@dataclass(frozen=True)
class Population:
    """Players in registration order (index = player number); month numbers count from the first month (0)."""

    player_id: np.ndarray  # int64, unique 7-8 digit FIDE-like ids
    federation: np.ndarray  # int8 index into the federation plan
    female: np.ndarray  # bool
    birth_year: np.ndarray  # int32
    name: list[str]
    title: list[str]  # "" when untitled
    entry_month: np.ndarray  # int32, first month the player exists (and is registered)
    exit_month: np.ndarray  # int32, first month the player no longer exists (may be past the end)
    activity: np.ndarray  # float64, event entries per month before age and season factors
    strength: np.ndarray  # float32 [players, months], NaN where the player does not exist
    pairing_bias: np.ndarray  # float64, persistent error of the organisers' strength estimate
    seed_rating: np.ndarray  # int32, rating on the list before the first month; 0 = unrated
    seed_games_total: np.ndarray  # int32, games behind the seed rating (0 when unrated)
    seed_ever_2400: np.ndarray  # bool

    @property
    def size(self) -> int:
        return len(self.player_id)

    def exists(self, month: int) -> np.ndarray:
        return (self.entry_month <= month) & (self.exit_month > month)

    def age(self, absolute_month: int) -> np.ndarray:
        """Age in years at an absolute month index (year * 12 + month - 1), birthdays mid-year."""
        return absolute_month / 12.0 - self.birth_year - 0.5


def by_year(table: tuple[tuple[float, float], ...], years: np.ndarray | float) -> np.ndarray:
    """A calendar-year table ((year, value), ...) interpolated linearly, constant beyond its ends."""
    xs, ys = zip(*table, strict=True)
    return np.interp(years, xs, ys)


def _truncated_normal(
    rng: np.random.Generator, mean: np.ndarray | float, sd: float, n: int, low: float, high: float
) -> np.ndarray:
    return np.clip(rng.normal(mean, sd, n), low, high)


def seed_list_rules(first_absolute_month: int) -> RuleSet:
    """The rule set whose floor a seed list of the given first month keeps: the one that rates the month
    (SEED_LIST_RULES).
    """
    return resolve_rules(C.SEED_LIST_RULES, month_from_index(first_absolute_month))


def _pool_and_influx(first_absolute_month: int, months: int) -> tuple[float, np.ndarray]:
    """Pool size at start and monthly influx on POOL_SIZE_BY_YEAR's curve (its growth plus the leavers)."""
    years = (first_absolute_month + np.arange(months + 1)) / 12.0
    pool = by_year(C.POOL_SIZE_BY_YEAR, years)
    return float(pool[0]), np.maximum(np.diff(pool) + C.EXIT_HAZARD_MEAN * pool[:-1], 0.0)


def initial_count(players: int, first_absolute_month: int, months: int) -> int:
    """How many of `players` exist at the start: the pool's share of everybody who ever exists."""
    pool, influx = _pool_and_influx(first_absolute_month, months)
    return int(round(players * pool / (pool + influx.sum())))


def entry_months(rng: np.random.Generator, players: int, first_absolute_month: int, months: int) -> np.ndarray:
    """Registration month of each player, in registration order: the pool present at start, then the influx."""
    _, influx = _pool_and_influx(first_absolute_month, months)
    initial = initial_count(players, first_absolute_month, months)
    newcomers = rng.multinomial(players - initial, influx / influx.sum()) if months else np.zeros(0, dtype=np.int64)
    return np.concatenate([np.zeros(initial, dtype=np.int32), np.repeat(np.arange(months, dtype=np.int32), newcomers)])


def build_population(
    rng: np.random.Generator,
    players: int,
    first_absolute_month: int,
    months: int,
    federations: tuple[C.Federation, ...],
) -> Population:
    """Draw the players and simulate their true strength month by month (vectorised over players)."""
    n = players
    entry = entry_months(rng, n, first_absolute_month, months)
    # The pool present at start; newcomers may also register in the first month.
    initial = np.zeros(n, dtype=bool)
    initial[: initial_count(n, first_absolute_month, months)] = True
    entry_year = (first_absolute_month + entry) / 12.0

    weights = np.asarray([f.weight for f in federations])
    federation = rng.choice(len(federations), size=n, p=weights / weights.sum()).astype(np.int8)
    player_id = np.zeros(n, dtype=np.int64)
    for f, plan in enumerate(federations):
        members = np.nonzero(federation == f)[0]
        gaps = rng.integers(1, C.ID_MAX_GAP + 1, len(members))
        player_id[members] = plan.id_base + np.cumsum(gaps)
    if len(np.unique(player_id)) != n:  # only possible far beyond the intended population sizes
        raise ValueError(f"{n} players do not fit the federation id ranges")

    female = rng.random(n) < C.FEMALE_SHARE
    junior_share = np.where(
        initial,
        by_year(C.INITIAL_JUNIOR_SHARE_BY_YEAR, entry_year),
        by_year(C.NEWCOMER_JUNIOR_SHARE_BY_YEAR, entry_year),
    )
    junior = rng.random(n) < junior_share
    entry_age = np.where(
        initial,
        np.where(junior, rng.uniform(*C.INITIAL_JUNIOR_AGE, n), np.minimum(20 + rng.gamma(2.0, 14.0, n), 85)),
        np.where(
            junior,
            rng.uniform(
                by_year(C.JUNIOR_ENTRY_AGE_BY_YEAR[0], entry_year), by_year(C.JUNIOR_ENTRY_AGE_BY_YEAR[1], entry_year)
            ),
            np.minimum(18 + rng.gamma(2.0, 10.0, n), 75),
        ),
    )
    entry_absolute = first_absolute_month + entry
    birth_year = np.floor(entry_absolute / 12.0 - entry_age).astype(np.int32)

    low, high = C.POTENTIAL_RANGE
    adult_mean = np.where(
        initial, C.POTENTIAL_INITIAL_ADULT[0], by_year(C.NEWCOMER_ADULT_POTENTIAL_BY_YEAR, entry_year)
    )
    adult_sd = np.where(initial, C.POTENTIAL_INITIAL_ADULT[1], C.NEWCOMER_ADULT_POTENTIAL_SD)
    potential = np.where(
        junior,
        _truncated_normal(rng, C.POTENTIAL_JUNIOR[0], C.POTENTIAL_JUNIOR[1], n, low, high),
        np.clip(rng.normal(adult_mean, adult_sd), low, high),
    )
    at_age_7 = rng.normal(*C.STRENGTH_AT_AGE_7, n)
    potential = np.maximum(potential, at_age_7 + 100)  # nobody gets weaker by growing up
    tau = rng.uniform(*C.JUNIOR_TAU_YEARS, n)

    hazard = np.where(
        junior, C.EXIT_HAZARD_JUNIOR, np.where(entry_age >= 65, C.EXIT_HAZARD_SENIOR, C.EXIT_HAZARD_ADULT)
    )
    exit_month = (entry + rng.geometric(hazard)).astype(np.int32)
    activity = rng.lognormal(np.log(C.ACTIVITY_MEAN) - C.ACTIVITY_SIGMA**2 / 2, C.ACTIVITY_SIGMA, n)
    pairing_bias = rng.normal(0.0, C.PAIRING_BIAS_SD, n)

    strength = _strength_paths(
        rng, first_absolute_month, months, birth_year, at_age_7, potential, tau, entry, exit_month
    )

    # The seed list: initial players, rated with noise; juniors lag behind their improvement.
    start_strength = strength[:, 0].astype(np.float64) if months else np.zeros(n)
    rated_share = np.where(junior, C.INITIAL_RATED_SHARE_JUNIOR, C.INITIAL_RATED_SHARE_ADULT)
    on_list = initial & (rng.random(n) < rated_share)
    noisy = np.round(
        start_strength + rng.normal(0.0, C.SEED_LIST_NOISE_SD, n) - np.where(junior, C.SEED_LIST_JUNIOR_LAG, 0.0)
    )
    on_list &= ~_below_floor_numpy(noisy, seed_list_rules(first_absolute_month))  # no rating published below it
    seed_rating = np.where(on_list, noisy, 0).astype(np.int32)
    start_age = first_absolute_month / 12.0 - birth_year - 0.5
    years_playing = np.clip(start_age - 10.0, 1.0, 40.0) * rng.uniform(0.2, 1.0, n)
    seed_games_total = np.where(on_list, 5 + rng.poisson(activity * 7 * 12 * years_playing), 0).astype(np.int32)
    seed_ever_2400 = on_list & ((seed_rating >= 2400) | ((seed_rating >= 2300) & (rng.random(n) < 0.25)))

    codes = [federations[f].code for f in federation]
    names = player_names(rng, codes, female)
    title = _titles(rng, initial & (start_age >= 14), female, start_strength)
    return Population(
        player_id=player_id,
        federation=federation,
        female=female,
        birth_year=birth_year,
        name=names,
        title=title,
        entry_month=entry,
        exit_month=exit_month,
        activity=activity,
        strength=strength,
        pairing_bias=pairing_bias,
        seed_rating=seed_rating,
        seed_games_total=seed_games_total,
        seed_ever_2400=seed_ever_2400,
    )


def _strength_paths(
    rng: np.random.Generator,
    first_absolute_month: int,
    months: int,
    birth_year: np.ndarray,
    at_age_7: np.ndarray,
    potential: np.ndarray,
    tau: np.ndarray,
    entry: np.ndarray,
    exit_month: np.ndarray,
) -> np.ndarray:
    """Month by month: a deterministic age curve plus AR(1) form; NaN outside
    the player's life span. The curve approaches the potential exponentially from age 7, so beginners
    improve fastest (a few hundred Elo a year) and slow down as they near their potential; adults are
    there, seniors decline.
    """
    n = len(birth_year)
    strength = np.full((n, months), np.nan, dtype=np.float32)
    form = rng.normal(0.0, C.FORM_SHOCK_SD / np.sqrt(1 - C.FORM_AR**2), n)
    for m in range(months):
        age = (first_absolute_month + m) / 12.0 - birth_year - 0.5
        curve = potential - (potential - at_age_7) * np.exp(-(np.maximum(age, 7.0) - 7.0) / tau)
        curve -= C.SENIOR_DECLINE * np.maximum(age - 50.0, 0.0) ** 2
        form = C.FORM_AR * form + rng.normal(0.0, C.FORM_SHOCK_SD, n)
        alive = (entry <= m) & (exit_month > m)
        strength[alive, m] = np.round(curve[alive] + form[alive], 1)
    return strength


def _titles(rng: np.random.Generator, eligible: np.ndarray, female: np.ndarray, strength: np.ndarray) -> list[str]:
    """FIDE titles for strong players present at start (a peak proxy: strength plus noise)."""
    n = len(eligible)
    peak = np.nan_to_num(strength, nan=0.0) + rng.normal(0.0, 40.0, n)
    has_title = eligible & (rng.random(n) < 0.85)
    open_title = np.select([peak >= 2500, peak >= 2400, peak >= 2300, peak >= 2200], ["GM", "IM", "FM", "CM"], "")
    women_title = np.select([peak >= 2300, peak >= 2200, peak >= 2100, peak >= 2000], ["WGM", "WIM", "WFM", "WCM"], "")
    title = np.where(open_title != "", open_title, np.where(female, women_title, ""))
    return np.where(has_title, title, "").tolist()
