"""The synthetic player population: identities, entry and exit months, monthly true strength, seed list."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.generator import config as C
from pipeline.generator.names import player_names


@dataclass(frozen=True)
class Population:
    """Players in registration order (index = player number); month numbers count from the first month (0)."""

    player_id: np.ndarray      # int64, unique 7-8 digit FIDE-like ids
    federation: np.ndarray     # int8 index into config.FEDERATIONS
    female: np.ndarray         # bool
    birth_year: np.ndarray     # int32
    name: list[str]
    title: list[str]           # "" when untitled
    entry_month: np.ndarray    # int32, first month the player exists (and is registered)
    exit_month: np.ndarray     # int32, first month the player no longer exists (may be past the end)
    activity: np.ndarray       # float64, event entries per month before age and season factors
    strength: np.ndarray       # float64 [players, months], NaN where the player does not exist
    pairing_bias: np.ndarray   # float64, persistent error of the organisers' strength estimate
    seed_rating: np.ndarray    # int32, rating on the list before the first month; 0 = unrated
    seed_games_total: np.ndarray  # int32, games behind the seed rating (0 when unrated)
    seed_ever_2400: np.ndarray    # bool

    @property
    def size(self) -> int:
        return len(self.player_id)

    def exists(self, month: int) -> np.ndarray:
        return (self.entry_month <= month) & (self.exit_month > month)

    def age(self, absolute_month: int) -> np.ndarray:
        """Age in years at an absolute month index (year * 12 + month - 1), birthdays mid-year."""
        return absolute_month / 12.0 - self.birth_year - 0.5


def _truncated_normal(rng: np.random.Generator, mean_sd: tuple[float, float], n: int,
                      low: float, high: float) -> np.ndarray:
    return np.clip(rng.normal(mean_sd[0], mean_sd[1], n), low, high)


def build_population(rng: np.random.Generator, players: int, first_absolute_month: int,
                     months: int) -> Population:
    """Draw the players and simulate their true strength month by month (vectorised over players)."""
    n = players
    initial = rng.random(n) < C.INITIAL_SHARE
    # Newcomer influx grows linearly over the years.
    influx_weights = 1.0 + C.INFLUX_GROWTH_PER_YEAR * np.arange(months) / 12.0
    entry = np.where(initial, 0, rng.choice(months, size=n, p=influx_weights / influx_weights.sum()))
    # Registration order: by entry month, random within a month; ids grow along it.
    order = np.lexsort((rng.random(n), entry))
    initial, entry = initial[order], entry[order].astype(np.int32)

    federation = rng.choice(len(C.FEDERATIONS), size=n, p=np.asarray(C.FEDERATION_WEIGHTS)).astype(np.int8)
    player_id = np.zeros(n, dtype=np.int64)
    for f, code in enumerate(C.FEDERATIONS):
        members = np.nonzero(federation == f)[0]
        gaps = rng.integers(1, C.ID_MAX_GAP + 1, len(members))
        player_id[members] = C.ID_BASE[code] + np.cumsum(gaps)
    if len(np.unique(player_id)) != n:  # only possible far beyond the intended population sizes
        raise ValueError(f"{n} players do not fit the federation id ranges")

    female = rng.random(n) < C.FEMALE_SHARE
    junior = np.where(initial, rng.random(n) < C.INITIAL_JUNIOR_SHARE, rng.random(n) < C.NEWCOMER_JUNIOR_SHARE)
    entry_age = np.where(
        initial,
        np.where(junior, rng.uniform(8, 19, n), np.minimum(20 + rng.gamma(2.0, 14.0, n), 85)),
        np.where(junior, rng.uniform(7, 15, n), np.minimum(18 + rng.gamma(2.0, 10.0, n), 75)),
    )
    entry_absolute = first_absolute_month + entry
    birth_year = np.floor(entry_absolute / 12.0 - entry_age).astype(np.int32)

    low, high = C.POTENTIAL_RANGE
    potential = np.where(
        junior,
        _truncated_normal(rng, C.POTENTIAL_JUNIOR, n, low, high),
        np.where(initial, _truncated_normal(rng, C.POTENTIAL_INITIAL_ADULT, n, low, high),
                 _truncated_normal(rng, C.POTENTIAL_NEWCOMER_ADULT, n, low, high)),
    )
    at_age_7 = rng.normal(*C.STRENGTH_AT_AGE_7, n)
    potential = np.maximum(potential, at_age_7 + 100)  # nobody gets weaker by growing up
    tau = rng.uniform(*C.JUNIOR_TAU_YEARS, n)

    exit_month = entry + rng.geometric(C.EXIT_HAZARD_PER_MONTH, n).astype(np.int32)
    activity = rng.lognormal(np.log(C.ACTIVITY_MEAN) - C.ACTIVITY_SIGMA**2 / 2, C.ACTIVITY_SIGMA, n)
    pairing_bias = rng.normal(0.0, C.PAIRING_BIAS_SD, n)

    # Month by month: deterministic age curve plus AR(1) form; NaN outside the player's life span.
    strength = np.full((n, months), np.nan)
    form = rng.normal(0.0, C.FORM_SHOCK_SD / np.sqrt(1 - C.FORM_AR**2), n)
    for m in range(months):
        age = np.maximum((first_absolute_month + m) / 12.0 - birth_year - 0.5, 7.0)
        curve = potential - (potential - at_age_7) * np.exp(-(age - 7.0) / tau)
        curve -= C.SENIOR_DECLINE * np.maximum(age - 50.0, 0.0) ** 2
        form = C.FORM_AR * form + rng.normal(0.0, C.FORM_SHOCK_SD, n)
        alive = (entry <= m) & (exit_month > m)
        strength[alive, m] = np.round(curve[alive] + form[alive], 1)

    # The seed list: initial players, rated with noise; juniors lag behind their improvement.
    start_strength = strength[:, 0] if months else np.zeros(n)
    rated_share = np.where(junior, C.INITIAL_RATED_SHARE_JUNIOR, C.INITIAL_RATED_SHARE_ADULT)
    on_list = initial & (rng.random(n) < rated_share)
    noisy = np.round(start_strength + rng.normal(0.0, 50.0, n) - np.where(junior, 40.0, 0.0))
    on_list &= noisy >= C.RATING_FLOOR  # below the floor no rating is published
    seed_rating = np.where(on_list, noisy, 0).astype(np.int32)
    start_age = first_absolute_month / 12.0 - birth_year - 0.5
    years_playing = np.clip(start_age - 10.0, 1.0, 40.0) * rng.uniform(0.2, 1.0, n)
    seed_games_total = np.where(on_list, 5 + rng.poisson(activity * 7 * 12 * years_playing), 0).astype(np.int32)
    seed_ever_2400 = on_list & ((seed_rating >= 2400) | ((seed_rating >= 2300) & (rng.random(n) < 0.25)))

    codes = [C.FEDERATIONS[f] for f in federation]
    names = player_names(rng, codes, female)
    title = _titles(rng, initial & (start_age >= 14), female, start_strength)
    return Population(
        player_id=player_id, federation=federation, female=female, birth_year=birth_year, name=names,
        title=title, entry_month=entry, exit_month=exit_month, activity=activity, strength=strength,
        pairing_bias=pairing_bias, seed_rating=seed_rating, seed_games_total=seed_games_total,
        seed_ever_2400=seed_ever_2400,
    )


def _titles(rng: np.random.Generator, eligible: np.ndarray, female: np.ndarray, strength: np.ndarray) -> list[str]:
    """FIDE titles for strong players present at start (a peak proxy: strength plus noise)."""
    n = len(eligible)
    peak = np.nan_to_num(strength, nan=0.0) + rng.normal(0.0, 40.0, n)
    has_title = eligible & (rng.random(n) < 0.85)
    open_titles = ((2500, "GM"), (2400, "IM"), (2300, "FM"), (2200, "CM"))
    women_titles = ((2300, "WGM"), (2200, "WIM"), (2100, "WFM"), (2000, "WCM"))
    titles = [""] * n
    for i in np.nonzero(has_title)[0]:
        for threshold, code in open_titles:
            if peak[i] >= threshold:
                titles[i] = code
                break
        if not titles[i] and female[i]:
            for threshold, code in women_titles:
                if peak[i] >= threshold:
                    titles[i] = code
                    break
    return titles
