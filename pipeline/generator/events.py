"""The event calendar: which players enter which Swiss or round-robin events each month, and when events run."""

from __future__ import annotations

import calendar
from dataclasses import dataclass

import numpy as np

from pipeline.generator import config as C
from pipeline.generator.names import CITIES, RAPID_KIND, ROUND_ROBIN_KINDS, SWISS_KINDS, event_name, slugify
from pipeline.generator.population import Population
from pipeline.months import month_from_index


@dataclass(frozen=True)
class Schedule:
    """All events of the generated span. Entries are contiguous per event, in starting-rank order."""

    # per event
    month: np.ndarray          # int32, month number counted from the first month
    host: np.ndarray           # int8, federation index of the organiser (decides the dump format)
    round_robin: np.ndarray    # bool
    rounds: np.ndarray         # int32
    start_day: np.ndarray      # int32, day of month of round 1
    span_days: np.ndarray      # int32, days from round 1 to the last round, plus one
    rapid: np.ndarray          # bool (CSV dumps only)
    bye_code: np.ndarray       # uint8, b"U" or b"F": what the odd player out of a Swiss round gets
    name: list[str]
    city: list[str]
    event_id: list[str]        # <fed lower>-<YYYY-MM>-<serial>-<name slug>, unique over the data set
    first_entry: np.ndarray    # int64, index of the event's first entry
    size: np.ndarray           # int64, entries (players) in the event
    # per entry
    entry_event: np.ndarray    # int64
    entry_player: np.ndarray   # int64, index into the population
    entry_start_rank: np.ndarray  # int32, 1-based
    entry_estimate: np.ndarray    # float64, strength the organiser pairs by
    entry_strength: np.ndarray    # float64, true strength in the event's month
    entry_stated_rating: np.ndarray  # int32, rating written in the dump; 0 = blank

    @property
    def events(self) -> int:
        return len(self.month)

    def round_day(self, event: int, round_index: int) -> int:
        """Day of month of a round: rounds spread evenly over the event's span."""
        return int(self.start_day[event] + (round_index * self.span_days[event]) // self.rounds[event])


def _cut_sizes(rng: np.random.Generator, total: int) -> list[int]:
    """Split `total` Swiss entries into event sizes in SWISS_SIZE, merging a small leftover."""
    low, high = C.SWISS_SIZE
    if total < C.MIN_EVENT_SIZE:
        return []
    if total <= high:
        return [total]
    sizes: list[int] = []
    remaining = total
    while remaining > 0:
        size = int(np.clip(round(rng.lognormal(*C.SWISS_SIZE_LOG_MEAN_SD)), low, high))
        size = min(size, remaining)
        leftover = remaining - size
        if 0 < leftover < low:
            # Too few for an event of their own: join this one, or split the two evenly.
            size = remaining if remaining <= high else remaining // 2
        sizes.append(size)
        remaining -= size
    return sizes


def _cut_round_robins(rng: np.random.Generator, total: int) -> list[int]:
    sizes: list[int] = []
    remaining = total
    while remaining >= min(C.ROUND_ROBIN_SIZES):
        size = int(rng.choice(C.ROUND_ROBIN_SIZES))
        size = min(size, remaining)
        sizes.append(size)
        remaining -= size
    return sizes


def build_schedule(rng: np.random.Generator, pop: Population, first_absolute_month: int, months: int) -> Schedule:
    """Draw each player's event entries per month and group them into events per host federation."""
    federations = len(C.FEDERATIONS)
    event_rows: list[tuple[int, int, bool]] = []  # (month, host, round robin)
    event_players: list[np.ndarray] = []
    event_estimates: list[np.ndarray] = []
    for m in range(months):
        absolute = first_absolute_month + m
        alive = np.nonzero(pop.exists(m))[0]
        age = pop.age(absolute)[alive]
        rate = pop.activity[alive] * np.where(age < 20, C.JUNIOR_ACTIVITY_FACTOR,
                                              np.where(age > 70, C.SENIOR_ACTIVITY_FACTOR, 1.0))
        rate = rate * C.SEASON_FACTOR[absolute % 12]
        entries = np.repeat(alive, rng.poisson(rate))
        host = pop.federation[entries].astype(np.int64)
        abroad = rng.random(len(entries)) < C.FOREIGN_PLAY_RATE
        host[abroad] = (host[abroad] + rng.integers(1, federations, int(abroad.sum()))) % federations
        # What organisers know: a few months old strength with a persistent personal error; on the
        # first month the seed list itself for rated players.
        known_month = np.maximum(m - C.PAIRING_LAG_MONTHS, pop.entry_month[entries])
        estimate = pop.strength[entries, known_month] + pop.pairing_bias[entries]
        if m == 0:
            rated = pop.seed_rating[entries] > 0
            estimate[rated] = pop.seed_rating[entries][rated]
        for f in range(federations):
            mine = np.nonzero(host == f)[0]
            mine = mine[rng.permutation(len(mine))]
            n_rr = int(len(mine) * C.ROUND_ROBIN_SLOT_SHARE)
            # Round robins gather players of similar strength (closed events, club championships).
            rr = mine[:n_rr][np.argsort(-estimate[mine[:n_rr]], kind="stable")]
            rr_sizes = _cut_round_robins(rng, len(rr))
            used = sum(rr_sizes)
            swiss = np.concatenate([mine[n_rr:], rr[used:]])
            groups = [(True, rr[a:a + s]) for a, s in zip(np.cumsum([0] + rr_sizes[:-1]), rr_sizes)]
            swiss_sizes = _cut_sizes(rng, len(swiss))
            groups += [(False, swiss[a:a + s]) for a, s in zip(np.cumsum([0] + swiss_sizes[:-1]), swiss_sizes)]
            for is_rr, group in groups:
                # A player drawn twice for the same event plays it once.
                _, first = np.unique(entries[group], return_index=True)
                group = group[np.sort(first)]
                if len(group) < C.MIN_EVENT_SIZE:
                    continue
                ranking = np.argsort(-estimate[group], kind="stable")
                event_rows.append((m, f, is_rr))
                event_players.append(entries[group][ranking])
                event_estimates.append(estimate[group][ranking])

    return _assemble(rng, pop, first_absolute_month, event_rows, event_players, event_estimates)


def _assemble(rng: np.random.Generator, pop: Population, first_absolute_month: int,
              event_rows: list[tuple[int, int, bool]], event_players: list[np.ndarray],
              event_estimates: list[np.ndarray]) -> Schedule:
    """Give every event its type, rounds, dates, name and id, and flatten the entries."""
    n_events = len(event_rows)
    month = np.array([r[0] for r in event_rows], dtype=np.int32)
    host = np.array([r[1] for r in event_rows], dtype=np.int8)
    round_robin = np.array([r[2] for r in event_rows], dtype=bool)
    size = np.array([len(p) for p in event_players], dtype=np.int64)

    swiss_rounds = rng.choice(C.SWISS_ROUNDS, size=n_events, p=np.asarray(C.SWISS_ROUNDS_WEIGHTS))
    # Small Swiss events play fewer rounds (else the same players would meet again and again).
    swiss_rounds = np.minimum(swiss_rounds, np.minimum(np.ceil(np.log2(np.maximum(size, 2))) + 3, size - 1))
    rr_rounds = size - 1 + size % 2  # odd round robins: everybody sits out once
    rounds = np.where(round_robin, rr_rounds, swiss_rounds).astype(np.int32)
    csv_host = np.array([C.DUMP_FORMAT[C.FEDERATIONS[h]] == "csv" for h in host], dtype=bool)
    rapid = csv_host & ~round_robin & (rng.random(n_events) < C.RAPID_EVENT_SHARE_CSV)
    swiss_span = np.array([C.SWISS_SPAN_DAYS.get(int(r), int(r)) for r in swiss_rounds], dtype=np.int32)
    span = np.where(round_robin, rounds, np.where(rapid, 1, swiss_span)).astype(np.int32)
    days_in_month = np.array([_days_in(first_absolute_month + int(m)) for m in month], dtype=np.int32)
    start_day = (1 + np.floor(rng.random(n_events) * (days_in_month - span + 1))).astype(np.int32)
    bye_code = np.where(rng.random(n_events) < C.FULL_POINT_BYE_EVENT_SHARE, ord("F"), ord("U")).astype(np.uint8)

    names, cities, event_ids = [], [], []
    editions: dict[tuple[int, str, str], int] = {}
    serial: dict[tuple[int, int], int] = {}
    city_pick, kind_pick, edition_pick = rng.random(n_events), rng.random(n_events), rng.integers(1, 40, n_events)
    for e in range(n_events):
        fed = C.FEDERATIONS[host[e]]
        kinds = ROUND_ROBIN_KINDS[fed] if round_robin[e] else ((RAPID_KIND,) if rapid[e] else SWISS_KINDS[fed])
        city = CITIES[fed][int(city_pick[e] * len(CITIES[fed]))]
        kind = kinds[int(kind_pick[e] * len(kinds))]
        key = (int(host[e]), city, kind)
        # The edition counter per city and kind makes names unique across the whole data set.
        editions[key] = editions.get(key, int(edition_pick[e]) - 1) + 1
        name = event_name(fed, city, kind, editions[key])
        serial[(int(host[e]), int(month[e]))] = serial.get((int(host[e]), int(month[e])), 0) + 1
        label = month_from_index(first_absolute_month + int(month[e]))
        names.append(name)
        cities.append(city)
        event_ids.append(f"{fed.lower()}-{label}-{serial[(int(host[e]), int(month[e]))]:03d}-{slugify(name)}")

    first_entry = np.zeros(n_events, dtype=np.int64)
    if n_events:
        first_entry[1:] = np.cumsum(size)[:-1]
    entry_event = np.repeat(np.arange(n_events, dtype=np.int64), size)
    entry_player = np.concatenate(event_players) if n_events else np.zeros(0, dtype=np.int64)
    entry_estimate = np.concatenate(event_estimates) if n_events else np.zeros(0)
    entry_start_rank = (np.arange(len(entry_event)) - first_entry[entry_event] + 1).astype(np.int32)
    entry_month = month[entry_event]
    entry_strength = pop.strength[entry_player, entry_month]
    # Ratings are stated only where the list in force is known to the generator: the seed list,
    # in force for events of the first month. Later dumps leave them blank.
    entry_stated_rating = np.where(entry_month == 0, pop.seed_rating[entry_player], 0).astype(np.int32)
    return Schedule(
        month=month, host=host, round_robin=round_robin, rounds=rounds, start_day=start_day, span_days=span,
        rapid=rapid, bye_code=bye_code, name=names, city=cities, event_id=event_ids, first_entry=first_entry,
        size=size, entry_event=entry_event, entry_player=entry_player.astype(np.int64),
        entry_start_rank=entry_start_rank, entry_estimate=entry_estimate, entry_strength=entry_strength,
        entry_stated_rating=entry_stated_rating,
    )


def _days_in(absolute_month: int) -> int:
    year, month0 = divmod(absolute_month, 12)
    return calendar.monthrange(year, month0 + 1)[1]
