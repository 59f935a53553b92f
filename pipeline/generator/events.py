"""The event calendar: which players enter which events each month.

The events: opens, rating sections, junior events, round robins, team events.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass, field

import numpy as np

from pipeline.generator import config as C
from pipeline.generator.names import (
    BLITZ_KIND,
    CITIES,
    JUNIOR_KINDS,
    RAPID_KIND,
    ROUND_ROBIN_KINDS,
    SECTION_KINDS,
    SWISS_KINDS,
    TEAM_KINDS,
    event_name,
    slugify,
    team_names,
)
from pipeline.generator.population import Population
from pipeline.months import month_from_index

# Event kinds. Opens mix every level; sections, round robins and team divisions gather players of
# similar strength; junior events only juniors. The mix decides how isolated the pool's bottom is.
OPEN, SECTION, JUNIOR, ROUND_ROBIN, TEAM = range(5)
KIND_NAMES = ("open", "section", "junior", "round-robin", "team")
SWISS_KINDS_SET = (OPEN, SECTION, JUNIOR)
# Time controls, as the pipeline classifies them.
CLASSICAL, RAPID, BLITZ = range(3)
TIME_CONTROLS = ("classical", "rapid", "blitz")
TC_SECONDS = (C.CLASSICAL_TC, C.RAPID_TC, C.BLITZ_TC)


@dataclass(frozen=True)
class Schedule:
    """Events of a block of months. Entries are contiguous per event, in starting-rank order (team
    events: team by team, boards in order).
    """

    # per event
    month: np.ndarray  # int32, month number counted from the data set's first month
    host: np.ndarray  # int8, federation index of the organiser (decides the dump format)
    kind: np.ndarray  # int8, OPEN / SECTION / JUNIOR / ROUND_ROBIN / TEAM
    time_control: np.ndarray  # int8, CLASSICAL / RAPID / BLITZ
    rounds: np.ndarray  # int32
    start_day: np.ndarray  # int32, day of month of round 1
    span_days: np.ndarray  # int32, days from round 1 to the last round, plus one
    bye_code: np.ndarray  # uint8, b"U" or b"F": what the odd player out of a Swiss round gets
    teams: np.ndarray  # int32, teams of a team event (0 otherwise)
    boards: np.ndarray  # int32, boards per team of a team event (0 otherwise)
    name: list[str]
    city: list[str]
    event_id: list[str]  # <fed lower>-<YYYY-MM>-<serial>-<name slug>, unique over the data set
    team_name: list[list[str]]  # per event, its teams' names (empty for individual events)
    first_entry: np.ndarray  # int64, index of the event's first entry
    size: np.ndarray  # int64, entries (players) in the event
    # per entry
    entry_event: np.ndarray  # int64
    entry_player: np.ndarray  # int64, index into the population
    entry_start_rank: np.ndarray  # int32, 1-based
    entry_estimate: np.ndarray  # float64, strength the organiser pairs by
    entry_strength: np.ndarray  # float64, true strength in the event's month
    entry_stated_rating: np.ndarray  # int32, rating written in the dump; 0 = blank
    entry_team: np.ndarray  # int32, 0-based team of a team event, -1 otherwise
    entry_board: np.ndarray  # int32, 0-based board of a team event, -1 otherwise

    @property
    def events(self) -> int:
        return len(self.month)

    @property
    def round_robin(self) -> np.ndarray:
        return self.kind == ROUND_ROBIN

    @property
    def swiss(self) -> np.ndarray:
        return np.isin(self.kind, SWISS_KINDS_SET)

    def round_day(self, event: int, round_index: int) -> int:
        """Day of month of a round: rounds spread evenly over the event's span."""
        return int(self.start_day[event] + (round_index * self.span_days[event]) // self.rounds[event])


@dataclass
class EventNamer:
    """Names and ids of events across blocks: edition numbers keep names unique over the data set."""

    federations: tuple[C.Federation, ...]
    editions: dict[tuple[int, str, str], int] = field(default_factory=dict)

    def name(
        self, host: int, kind: int, time_control: int, city_pick: float, kind_pick: float, edition_pick: int, limit: int
    ) -> tuple[str, str]:
        code = self.federations[host].code
        if kind == ROUND_ROBIN:
            kinds = ROUND_ROBIN_KINDS[code]
        elif kind == TEAM:
            kinds = TEAM_KINDS
        elif kind == SECTION:
            # A section is named after its rating limit (the top ones after their level).
            kinds = (f"Under {limit}",) if limit <= 2300 else SECTION_KINDS
        elif kind == JUNIOR:
            kinds = JUNIOR_KINDS
        else:
            kinds = SWISS_KINDS[code]
        label = kinds[int(kind_pick * len(kinds))]
        if time_control == RAPID:
            label = RAPID_KIND if kind == OPEN else f"{label} {RAPID_KIND}"
        elif time_control == BLITZ:
            label = BLITZ_KIND if kind == OPEN else f"{label} {BLITZ_KIND}"
        city = CITIES[code][int(city_pick * len(CITIES[code]))]
        key = (host, city, label)
        # The edition counter per city and kind makes names unique across the whole data set.
        self.editions[key] = self.editions.get(key, edition_pick - 1) + 1
        return event_name(code, city, label, self.editions[key]), city


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
        size = min(int(rng.choice(C.ROUND_ROBIN_SIZES)), remaining)
        sizes.append(size)
        remaining -= size
    return sizes


def _cut_team_events(rng: np.random.Generator, total: int) -> list[tuple[int, int]]:
    """(teams, boards) of consecutive team events filling at most `total` entries."""
    shapes: list[tuple[int, int]] = []
    remaining = total
    while True:
        teams, boards = int(rng.choice(C.TEAM_COUNTS)), int(rng.choice(C.TEAM_BOARDS))
        if teams * boards > remaining:
            return shapes
        shapes.append((teams, boards))
        remaining -= teams * boards


@dataclass
class _Draft:
    """One event before flattening: month, host, kind, players in starting-rank order and their estimates."""

    month: int
    host: int
    kind: int
    players: np.ndarray
    estimates: np.ndarray
    teams: int = 0
    boards: int = 0
    limit: int = 0  # a section's upper rating limit


def _month_entries(
    rng: np.random.Generator, pop: Population, first_absolute_month: int, m: int, federations: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(player, host, estimate, kind) of every event entry in month m, one entry per player, host and kind."""
    absolute = first_absolute_month + m
    alive = np.nonzero(pop.exists(m))[0]
    age = pop.age(absolute)[alive]
    rate = pop.activity[alive] * np.where(
        age < C.JUNIOR_AGE_BELOW, C.JUNIOR_ACTIVITY_FACTOR, np.where(age > 70, C.SENIOR_ACTIVITY_FACTOR, 1.0)
    )
    rate = rate * C.SEASON_FACTOR[absolute % 12]
    counts = rng.poisson(rate)
    entries = np.repeat(alive, counts)
    junior = np.repeat(age < C.JUNIOR_AGE_BELOW, counts)
    host = pop.federation[entries].astype(np.int64)
    if federations > 1:
        abroad = rng.random(len(entries)) < C.FOREIGN_PLAY_RATE
        host[abroad] = (host[abroad] + rng.integers(1, federations, int(abroad.sum()))) % federations
    # What organisers know: a few months old strength with a persistent personal error; on the
    # first month the seed list itself for rated players.
    known_month = np.maximum(m - C.PAIRING_LAG_MONTHS, pop.entry_month[entries])
    estimate = pop.strength[entries, known_month].astype(np.float64) + pop.pairing_bias[entries]
    if m == 0:
        rated = pop.seed_rating[entries] > 0
        estimate[rated] = pop.seed_rating[entries][rated]

    u, v = rng.random(len(entries)), rng.random(len(entries))
    thresholds = np.cumsum([C.TEAM_SHARE, C.ROUND_ROBIN_SHARE, C.SECTION_SHARE])
    kind = np.select([v < thresholds[0], v < thresholds[1], v < thresholds[2]], [TEAM, ROUND_ROBIN, SECTION], OPEN)
    kind = np.where(junior & (u < C.JUNIOR_EVENT_SHARE), JUNIOR, kind)
    # A player drawn twice for the same host and kind plays one such event that month.
    key = (entries * federations + host) * len(KIND_NAMES) + kind
    _, first = np.unique(key, return_index=True)
    keep = np.sort(first)
    return entries[keep], host[keep], estimate[keep], kind[keep]


def _host_drafts(
    rng: np.random.Generator, m: int, f: int, players: np.ndarray, estimate: np.ndarray, kind: np.ndarray
) -> list[_Draft]:
    """Group one host's entries of one month into events."""
    drafts: list[_Draft] = []
    if len(players) < C.SWISS_SIZE[0]:
        # Too few for several kinds of event: a small federation's month is one open tournament.
        _, first = np.unique(players, return_index=True)
        group = np.sort(first)[np.argsort(-estimate[np.sort(first)], kind="stable")]
        return [_Draft(m, f, OPEN, players[group], estimate[group])] if len(group) >= C.MIN_EVENT_SIZE else []
    by_kind = {k: np.nonzero(kind == k)[0] for k in range(len(KIND_NAMES))}
    by_kind = {k: idx[rng.permutation(len(idx))] for k, idx in by_kind.items()}

    def bands(pool: np.ndarray, width: int, minimum: int) -> list[tuple[int, np.ndarray]]:
        """(upper rating limit, entries in random order) per band of `width` points of estimate, a band
        with fewer than `minimum` entries merged with the next ones up (small federations hold wider
        sections); the band edges move by whole hundreds from month to month, so neighbours still meet.
        """
        shift = 100 * int(rng.integers(0, width // 100))
        band = np.floor((estimate[pool] - shift) / width).astype(np.int64)
        groups: list[tuple[int, np.ndarray]] = []
        pending = np.zeros(0, dtype=np.int64)
        levels = np.unique(band)
        for i, b in enumerate(levels):
            pending = np.concatenate([pending, pool[band == b]])
            if len(pending) >= minimum or i == len(levels) - 1:
                groups.append((int(b + 1) * width + shift, pending))
                pending = np.zeros(0, dtype=np.int64)
        if len(groups) > 1 and len(groups[-1][1]) < minimum:  # a thin top joins the band below
            limit, top = groups.pop()
            groups[-1] = (limit, np.concatenate([groups[-1][1], top]))
        # Members of merged bands are mixed again (each band's part is in random order already).
        return [(limit, members[rng.permutation(len(members))]) for limit, members in groups]

    leftover = []
    # Team divisions: one level band split at random into teams; boards by estimate.
    for _, division_pool in bands(by_kind[TEAM], C.TEAM_BAND_WIDTH, min(C.TEAM_COUNTS) * min(C.TEAM_BOARDS)):
        used = 0
        for teams, boards in _cut_team_events(rng, len(division_pool)):
            division = division_pool[used : used + teams * boards]
            used += teams * boards
            team_of = rng.permutation(teams * boards) // boards
            team_strength = np.bincount(team_of, weights=estimate[division], minlength=teams)
            team_rank = np.empty(teams, dtype=np.int64)
            team_rank[np.argsort(-team_strength, kind="stable")] = np.arange(teams)
            # Team by team (strongest first), boards by estimate.
            order = np.lexsort((-estimate[division], team_rank[team_of]))
            drafts.append(_Draft(m, f, TEAM, players[division[order]], estimate[division[order]], teams, boards))
        leftover.append(division_pool[used:])

    for _, level in bands(by_kind[ROUND_ROBIN], C.ROUND_ROBIN_BAND_WIDTH, min(C.ROUND_ROBIN_SIZES)):
        sizes = _cut_round_robins(rng, len(level))
        starts = np.cumsum([0] + sizes)
        for a, b in zip(starts[:-1], starts[1:], strict=True):
            group = level[a:b][np.argsort(-estimate[level[a:b]], kind="stable")]
            drafts.append(_Draft(m, f, ROUND_ROBIN, players[group], estimate[group]))
        leftover.append(level[starts[-1] :])

    # Sections take one rating band each; opens and junior events take players in random order.
    open_pool = np.concatenate([by_kind[OPEN], *leftover])
    _, first = np.unique(players[open_pool], return_index=True)  # a leftover may also have an open entry
    swiss_pools = [
        (SECTION, limit, pool) for limit, pool in bands(by_kind[SECTION], C.SECTION_BAND_WIDTH, C.SWISS_SIZE[0])
    ]
    swiss_pools += [(OPEN, 0, open_pool[np.sort(first)]), (JUNIOR, 0, by_kind[JUNIOR])]
    for event_kind, limit, pool in swiss_pools:
        sizes = _cut_sizes(rng, len(pool))
        starts = np.cumsum([0] + sizes)
        for a, b in zip(starts[:-1], starts[1:], strict=True):
            group = pool[a:b]
            ranking = np.argsort(-estimate[group], kind="stable")
            drafts.append(_Draft(m, f, event_kind, players[group[ranking]], estimate[group[ranking]], limit=limit))
    return [d for d in drafts if len(d.players) >= C.MIN_EVENT_SIZE]


def build_schedule(
    rng: np.random.Generator,
    pop: Population,
    first_absolute_month: int,
    months: range,
    federations: tuple[C.Federation, ...],
    namer: EventNamer,
) -> Schedule:
    """Draw each player's event entries for the given months and group them into events per host."""
    drafts: list[_Draft] = []
    for m in months:
        entries, host, estimate, kind = _month_entries(rng, pop, first_absolute_month, m, len(federations))
        for f in range(len(federations)):
            mine = np.nonzero(host == f)[0]
            drafts += _host_drafts(rng, m, f, entries[mine], estimate[mine], kind[mine])
    return _assemble(rng, pop, first_absolute_month, drafts, namer)


def _assemble(
    rng: np.random.Generator, pop: Population, first_absolute_month: int, drafts: list[_Draft], namer: EventNamer
) -> Schedule:
    """Give every event its time control, rounds, dates, name and id, and flatten the entries."""
    n_events = len(drafts)
    month = np.array([d.month for d in drafts], dtype=np.int32)
    host = np.array([d.host for d in drafts], dtype=np.int8)
    kind = np.array([d.kind for d in drafts], dtype=np.int8)
    size = np.array([len(d.players) for d in drafts], dtype=np.int64)
    teams = np.array([d.teams for d in drafts], dtype=np.int32)
    boards = np.array([d.boards for d in drafts], dtype=np.int32)
    swiss = np.isin(kind, SWISS_KINDS_SET)

    tc_pick = rng.random(n_events)
    time_control = np.where(
        swiss & (tc_pick < C.RAPID_EVENT_SHARE),
        RAPID,
        np.where(swiss & (tc_pick < C.RAPID_EVENT_SHARE + C.BLITZ_EVENT_SHARE), BLITZ, CLASSICAL),
    )
    time_control = time_control.astype(np.int8)
    swiss_rounds = np.select(
        [time_control == RAPID, time_control == BLITZ],
        [rng.choice(C.RAPID_ROUNDS, size=n_events), np.full(n_events, C.BLITZ_ROUNDS)],
        rng.choice(C.SWISS_ROUNDS, size=n_events, p=np.asarray(C.SWISS_ROUNDS_WEIGHTS)),
    )
    # Small Swiss events play fewer rounds (else the same players would meet again and again).
    swiss_rounds = np.minimum(swiss_rounds, np.minimum(np.ceil(np.log2(np.maximum(size, 2))) + 3, size - 1))
    rr_rounds = size - 1 + size % 2  # odd round robins: everybody sits out once
    team_rounds = teams - 1 + teams % 2
    rounds = np.select([kind == ROUND_ROBIN, kind == TEAM], [rr_rounds, team_rounds], swiss_rounds).astype(np.int32)
    classical_span = np.array([C.SWISS_SPAN_DAYS.get(int(r), int(r)) for r in rounds], dtype=np.int32)
    span = np.select(
        [~swiss, time_control == BLITZ, time_control == RAPID],
        [rounds, np.ones(n_events), np.where(rounds > 7, 2, 1)],
        classical_span,
    ).astype(np.int32)
    days_in_month = np.array([_days_in(first_absolute_month + int(m)) for m in month], dtype=np.int32)
    start_day = (1 + np.floor(rng.random(n_events) * (days_in_month - span + 1))).astype(np.int32)
    bye_code = np.where(rng.random(n_events) < C.FULL_POINT_BYE_EVENT_SHARE, ord("F"), ord("U")).astype(np.uint8)

    names, cities, event_ids, team_lists = [], [], [], []
    serial: dict[tuple[int, int], int] = {}
    city_pick, kind_pick, edition_pick = rng.random(n_events), rng.random(n_events), rng.integers(1, 40, n_events)
    for e in range(n_events):
        h, m = int(host[e]), int(month[e])
        name, city = namer.name(
            h, int(kind[e]), int(time_control[e]), city_pick[e], kind_pick[e], int(edition_pick[e]), drafts[e].limit
        )
        serial[(h, m)] = serial.get((h, m), 0) + 1
        label = month_from_index(first_absolute_month + m)
        names.append(name)
        cities.append(city)
        event_ids.append(f"{namer.federations[h].code.lower()}-{label}-{serial[(h, m)]:03d}-{slugify(name)}")
        team_lists.append(team_names(namer.federations[h].code, int(teams[e]), city_pick[e]) if kind[e] == TEAM else [])

    first_entry = np.zeros(n_events, dtype=np.int64)
    if n_events:
        first_entry[1:] = np.cumsum(size)[:-1]
    entry_event = np.repeat(np.arange(n_events, dtype=np.int64), size)
    entry_player = np.concatenate([d.players for d in drafts]) if n_events else np.zeros(0, dtype=np.int64)
    entry_estimate = np.concatenate([d.estimates for d in drafts]) if n_events else np.zeros(0)
    position = np.arange(len(entry_event)) - first_entry[entry_event]
    entry_start_rank = (position + 1).astype(np.int32)
    entry_boards = boards[entry_event]
    is_team = kind[entry_event] == TEAM
    entry_team = np.where(is_team, position // np.maximum(entry_boards, 1), -1).astype(np.int32)
    entry_board = np.where(is_team, position % np.maximum(entry_boards, 1), -1).astype(np.int32)
    entry_month = month[entry_event]
    entry_strength = pop.strength[entry_player, entry_month].astype(np.float64)
    # Ratings are stated only where the list in force is known to the generator: the seed list,
    # in force for events of the first month. Later dumps leave them blank.
    entry_stated_rating = np.where(entry_month == 0, pop.seed_rating[entry_player], 0).astype(np.int32)
    return Schedule(
        month=month,
        host=host,
        kind=kind,
        time_control=time_control,
        rounds=rounds,
        start_day=start_day,
        span_days=span,
        bye_code=bye_code,
        teams=teams,
        boards=boards,
        name=names,
        city=cities,
        event_id=event_ids,
        team_name=team_lists,
        first_entry=first_entry,
        size=size,
        entry_event=entry_event,
        entry_player=entry_player.astype(np.int64),
        entry_start_rank=entry_start_rank,
        entry_estimate=entry_estimate,
        entry_strength=entry_strength,
        entry_stated_rating=entry_stated_rating,
        entry_team=entry_team,
        entry_board=entry_board,
    )


def _days_in(absolute_month: int) -> int:
    year, month0 = divmod(absolute_month, 12)
    return calendar.monthrange(year, month0 + 1)[1]
