"""Pairs every event round and draws results.

Swiss by score and strength estimate, round robins and team matches by Berger tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.generator import config as C
from pipeline.generator.events import TEAM, TIME_CONTROLS, Schedule

NONE, WHITE, BLACK = 0, 1, 2
BLANK = ord(" ")
REPEAT_FIX_PASSES = 6
# Points of each TRF result code (the cell of one player in one round).
_POINTS = np.zeros(256)
for _code, _value in (("1", 1.0), ("+", 1.0), ("F", 1.0), ("U", 1.0), ("=", 0.5), ("H", 0.5)):
    _POINTS[ord(_code)] = _value
_MIRROR = np.arange(256, dtype=np.uint8)  # the opponent's code for a paired game
for _a, _b in (("1", "0"), ("0", "1"), ("=", "="), ("+", "-"), ("-", "+")):
    _MIRROR[ord(_a)] = ord(_b)


@dataclass(frozen=True)
class Crosstable:
    """Every entry's round cells, as in a TRF 001 record, plus the list of paired games."""

    opponent: np.ndarray  # int64 [entries, MAX_ROUNDS], opponent's entry index, -1 when not paired
    colour: np.ndarray  # int8 [entries, MAX_ROUNDS], NONE / WHITE / BLACK
    code: np.ndarray  # uint8 [entries, MAX_ROUNDS], TRF result code (blank = not paired)
    points: np.ndarray  # float64 [entries]
    final_rank: np.ndarray  # int32 [entries], 1-based within the event
    # paired games (played or forfeited), ordered by event, round, board
    game_white: np.ndarray  # int64 entry index
    game_black: np.ndarray  # int64 entry index
    game_round: np.ndarray  # int32, 0-based
    game_code: np.ndarray  # uint8, White's code: 1 = 0 (played) or + - (forfeit)

    @property
    def played(self) -> np.ndarray:
        """Mask of games actually played (rated candidates), as opposed to forfeits."""
        return np.isin(self.game_code, np.frombuffer(b"1=0", dtype=np.uint8))


def white_scores(
    rng: np.random.Generator, white: np.ndarray, black: np.ndarray, time_control: np.ndarray | None = None
) -> np.ndarray:
    """White's score (1, 0.5, 0) from true strengths: logistic expectancy with a White advantage and
    an explicit draw model (draws likelier between equals and at a higher level). Faster time
    controls (index into events.TIME_CONTROLS) shrink the difference and the draw rate.
    """
    tc = np.zeros(len(white), dtype=np.int64) if time_control is None else np.asarray(time_control, dtype=np.int64)
    difference_factor = np.array([C.TC_DIFFERENCE_FACTOR[name] for name in TIME_CONTROLS])[tc]
    draw_factor = np.array([C.TC_DRAW_FACTOR[name] for name in TIME_CONTROLS])[tc]
    diff = (white + C.WHITE_ADVANTAGE - black) * difference_factor
    expected = 1.0 / (1.0 + 10.0 ** (-diff / C.LOGISTIC_SCALE))
    level = (white + black) / 2.0
    peak = np.clip(C.DRAW_PEAK_AT_1000 + C.DRAW_PEAK_SLOPE * (level - 1000.0), *C.DRAW_PEAK_RANGE) * draw_factor
    # Keep P(win) + P(draw) / 2 equal to the expectancy: the draw share cannot exceed 2 min(E, 1 - E).
    p_draw = np.minimum(peak * np.exp(-((diff / C.DRAW_WIDTH) ** 2)), 2.0 * np.minimum(expected, 1.0 - expected))
    p_win = expected - p_draw / 2.0
    u = rng.random(len(diff))
    return np.where(u < p_win, 1.0, np.where(u < p_win + p_draw, 0.5, 0.0))


def _game_codes(
    rng: np.random.Generator, white_strength: np.ndarray, black_strength: np.ndarray, time_control: np.ndarray
) -> np.ndarray:
    """White's result code per game: mostly played results, a few forfeits."""
    score = white_scores(rng, white_strength, black_strength, time_control)
    codes = np.where(score == 1.0, ord("1"), np.where(score == 0.5, ord("="), ord("0"))).astype(np.uint8)
    forfeit = rng.random(len(codes)) < C.FORFEIT_RATE
    white_shows_up = rng.random(len(codes)) < 0.5
    codes[forfeit] = np.where(white_shows_up[forfeit], ord("+"), ord("-"))
    return codes


def round_robin_template(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Berger (circle) pairings for n players: opponent index and White flag per round and player.
    Odd n adds a dummy; pairing with it means sitting the round out (opponent -1).
    """
    nn = n + n % 2
    opponent = np.full((nn - 1, n), -1, dtype=np.int64)
    white = np.zeros((nn - 1, n), dtype=bool)
    ring = list(range(nn))
    for r in range(nn - 1):
        for board in range(nn // 2):
            a, b = ring[board], ring[nn - 1 - board]
            if a >= n or b >= n:
                continue
            # Berger colours: the fixed player alternates by round; on the other boards the player in
            # the ring's first half has White, and everybody moves through both halves.
            a_white = r % 2 == 0 if board == 0 else True
            opponent[r, a], opponent[r, b] = b, a
            white[r, a], white[r, b] = a_white, not a_white
        ring = [ring[0], ring[-1]] + ring[1:-1]
    return opponent, white


def pair_and_play(rng: np.random.Generator, schedule: Schedule) -> Crosstable:
    """Pair and play every round of every event; returns the crosstable cells and the game list."""
    n = len(schedule.entry_event)
    opponent = np.full((n, C.MAX_ROUNDS), -1, dtype=np.int64)
    colour = np.zeros((n, C.MAX_ROUNDS), dtype=np.int8)
    code = np.full((n, C.MAX_ROUNDS), BLANK, dtype=np.uint8)
    games: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (white, black, round)

    _pair_round_robins(schedule, opponent, colour, games)
    _pair_team_matches(schedule, opponent, colour, games)
    rr_white = np.concatenate([g[0] for g in games]) if games else np.zeros(0, dtype=np.int64)
    rr_black = np.concatenate([g[1] for g in games]) if games else np.zeros(0, dtype=np.int64)
    rr_round = np.concatenate([g[2] for g in games]) if games else np.zeros(0, dtype=np.int32)
    rr_codes = _game_codes(
        rng,
        schedule.entry_strength[rr_white],
        schedule.entry_strength[rr_black],
        schedule.time_control[schedule.entry_event[rr_white]],
    )
    code[rr_white, rr_round] = rr_codes
    code[rr_black, rr_round] = _MIRROR[rr_codes]

    sw_white, sw_black, sw_round, sw_codes = _pair_swiss(rng, schedule, opponent, colour, code)

    white = np.concatenate([rr_white, sw_white])
    black = np.concatenate([rr_black, sw_black])
    rounds = np.concatenate([rr_round, sw_round]).astype(np.int32)
    codes = np.concatenate([rr_codes, sw_codes])
    event = schedule.entry_event[white]
    # Boards by the better starting rank; team events rank team by team, so their games come match
    # by match with the boards in order.
    board = np.minimum(schedule.entry_start_rank[white], schedule.entry_start_rank[black])
    order = np.lexsort((board, rounds, event))

    in_event = np.arange(C.MAX_ROUNDS)[None, :] < schedule.rounds[schedule.entry_event][:, None]
    points = (_POINTS[code] * in_event).sum(axis=1)
    # Final rank: points, then starting rank.
    ranking = np.lexsort((schedule.entry_start_rank, -points, schedule.entry_event))
    final_rank = np.empty(n, dtype=np.int32)
    final_rank[ranking] = np.arange(n) - schedule.first_entry[schedule.entry_event[ranking]] + 1
    return Crosstable(
        opponent=opponent,
        colour=colour,
        code=code,
        points=points,
        final_rank=final_rank,
        game_white=white[order],
        game_black=black[order],
        game_round=rounds[order],
        game_code=codes[order],
    )


def _pair_round_robins(
    schedule: Schedule, opponent: np.ndarray, colour: np.ndarray, games: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> None:
    """Apply one Berger template to all round robins of the same size at once."""
    rr_events = np.nonzero(schedule.round_robin)[0]
    for n in np.unique(schedule.size[rr_events]):
        events = rr_events[schedule.size[rr_events] == n]
        template_opponent, template_white = round_robin_template(int(n))
        entries = schedule.first_entry[events][:, None] + np.arange(n)[None, :]  # [events, n]
        for r in range(template_opponent.shape[0]):
            seated = template_opponent[r] >= 0
            opponent[entries[:, seated], r] = entries[:, template_opponent[r][seated]]
            colour[entries[:, seated], r] = np.where(template_white[r][seated], WHITE, BLACK)
            whites = np.nonzero(seated & template_white[r])[0]
            white_entries = entries[:, whites].ravel()
            black_entries = entries[:, template_opponent[r][whites]].ravel()
            games.append((white_entries, black_entries, np.full(len(white_entries), r, dtype=np.int32)))


def _pair_team_matches(
    schedule: Schedule, opponent: np.ndarray, colour: np.ndarray, games: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> None:
    """Team round robins: a Berger table over the teams; board b of one team meets board b of the
    other, the first-named team having White on boards 1, 3, ... (all events of one shape at once).
    """
    team_events = np.nonzero(schedule.kind == TEAM)[0]
    shapes = np.unique(np.stack([schedule.teams[team_events], schedule.boards[team_events]], axis=1), axis=0)
    for teams, boards in shapes:
        events = team_events[(schedule.teams[team_events] == teams) & (schedule.boards[team_events] == boards)]
        template_opponent, template_white = round_robin_template(int(teams))
        board = np.arange(boards)
        for r in range(template_opponent.shape[0]):
            home = np.nonzero((template_opponent[r] >= 0) & template_white[r])[0]
            away = template_opponent[r][home]
            # [events, matches, boards] entry indices of both sides.
            home_entries = schedule.first_entry[events][:, None, None] + (home[:, None] * boards + board)[None]
            away_entries = schedule.first_entry[events][:, None, None] + (away[:, None] * boards + board)[None]
            home_white = np.broadcast_to(board % 2 == 0, home_entries.shape)
            white = np.where(home_white, home_entries, away_entries).ravel()
            black = np.where(home_white, away_entries, home_entries).ravel()
            opponent[white, r], opponent[black, r] = black, white
            colour[white, r], colour[black, r] = WHITE, BLACK
            games.append((white, black, np.full(len(white), r, dtype=np.int32)))


def _pair_swiss(
    rng: np.random.Generator, schedule: Schedule, opponent: np.ndarray, colour: np.ndarray, code: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pair round by round, all Swiss events at once: sort by event, score and starting rank; give the
    odd player out a bye; fold each (evened) score group, top half against bottom half.
    """
    n = len(schedule.entry_event)
    event = schedule.entry_event
    entry_rounds = schedule.rounds[event]
    swiss = schedule.swiss[event]
    start_rank = schedule.entry_start_rank

    # Absences decided up front: requested half-point byes, known absences, withdrawals.
    in_event = np.arange(C.MAX_ROUNDS)[None, :] < entry_rounds[:, None]
    u = rng.random((n, C.MAX_ROUNDS))
    absent_code = np.where(
        u < C.HALF_POINT_BYE_RATE, ord("H"), np.where(u < C.HALF_POINT_BYE_RATE + C.ZERO_POINT_BYE_RATE, ord("Z"), 0)
    )
    withdraws = rng.random(n) < C.WITHDRAWAL_RATE
    withdraw_from = np.floor(1 + rng.random(n) * np.maximum(entry_rounds - 1, 1)).astype(np.int64)
    gone = withdraws[:, None] & (np.arange(C.MAX_ROUNDS)[None, :] >= withdraw_from[:, None])
    absent_code = np.where(gone, BLANK, absent_code)
    absent = (absent_code != 0) & in_event & swiss[:, None]
    code[absent] = absent_code[absent]

    score = np.zeros(n)
    had_bye = np.zeros(n, dtype=bool)
    balance = np.zeros(n, dtype=np.int64)  # whites minus blacks so far
    last = np.zeros(n, dtype=np.int8)
    out_white, out_black, out_round, out_code = [], [], [], []
    for r in range(C.MAX_ROUNDS):
        if r > 0:  # last round's requested half-point byes count for this round's pairing
            score[absent[:, r - 1] & (absent_code[:, r - 1] == ord("H"))] += 0.5
        pool = np.nonzero(swiss & (entry_rounds > r) & ~absent[:, r])[0]
        if len(pool) == 0:
            continue
        order = pool[np.lexsort((start_rank[pool], -score[pool], event[pool]))]

        starts, sizes, pos = _groups(event[order])
        odd = sizes % 2 == 1
        if odd.any():
            # The lowest-placed player without a bye so far gets it (the last one if all had one).
            candidate = np.where(had_bye[order], -1, pos)
            lowest = np.maximum.reduceat(candidate, starts)
            lowest = np.where(lowest < 0, sizes - 1, lowest)
            bye_at = (starts + lowest)[odd]
            bye_entries = order[bye_at]
            code[bye_entries, r] = schedule.bye_code[event[bye_entries]]
            score[bye_entries] += 1.0
            had_bye[bye_entries] = True
            keep = np.ones(len(order), dtype=bool)
            keep[bye_at] = False
            order = order[keep]
            if len(order) == 0:
                continue
            starts, sizes, pos = _groups(event[order])

        # Score groups, each boundary moved up to an even position so that every group pairs
        # internally (an odd group borrows the next group's leader).
        group_score = score[order]
        new_group = pos == 0
        new_group[1:] |= group_score[1:] != group_score[:-1]
        event_start = np.arange(len(order)) - pos
        event_size = np.repeat(sizes, sizes)
        boundary = pos[new_group] + pos[new_group] % 2
        valid = boundary < event_size[new_group]
        mark = np.zeros(len(order), dtype=bool)
        mark[(event_start[new_group] + boundary)[valid]] = True
        bracket = np.cumsum(mark) - 1
        bracket_start = np.nonzero(mark)[0]
        bracket_size = np.diff(np.append(bracket_start, len(order)))
        within = np.arange(len(order)) - bracket_start[bracket]
        half = bracket_size[bracket] // 2
        top = within < half
        upper = order[top]
        lower = order[(np.arange(len(order)) + half)[top]]
        upper, lower = _avoid_repeats(upper, lower, event[upper], opponent[:, :r])

        # Colours: the player with fewer whites gets White; then alternate from the last round; else a coin.
        coin = rng.random(len(upper)) < 0.5
        alternate = (last[upper] != last[lower]) & (last[upper] != NONE)
        upper_white = np.where(
            balance[upper] != balance[lower],
            balance[upper] < balance[lower],
            np.where(alternate, last[upper] == BLACK, coin),
        )
        white = np.where(upper_white, upper, lower)
        black = np.where(upper_white, lower, upper)

        codes = _game_codes(
            rng, schedule.entry_strength[white], schedule.entry_strength[black], schedule.time_control[event[white]]
        )
        code[white, r] = codes
        code[black, r] = _MIRROR[codes]
        opponent[white, r], opponent[black, r] = black, white
        colour[white, r], colour[black, r] = WHITE, BLACK
        score[white] += _POINTS[codes]
        score[black] += _POINTS[_MIRROR[codes]]
        balance[white] += 1
        balance[black] -= 1
        last[white], last[black] = WHITE, BLACK
        out_white.append(white)
        out_black.append(black)
        out_round.append(np.full(len(white), r, dtype=np.int32))
        out_code.append(codes)

    if not out_white:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint8)
    return (np.concatenate(out_white), np.concatenate(out_black), np.concatenate(out_round), np.concatenate(out_code))


def _groups(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start, size and position-within-group for runs of equal keys in a sorted array."""
    change = np.ones(len(sorted_keys), dtype=bool)
    change[1:] = sorted_keys[1:] != sorted_keys[:-1]
    starts = np.nonzero(change)[0]
    sizes = np.diff(np.append(starts, len(sorted_keys)))
    pos = np.arange(len(sorted_keys)) - np.repeat(starts, sizes)
    return starts, sizes, pos


def _met_before(a: np.ndarray, b: np.ndarray, past_opponents: np.ndarray) -> np.ndarray:
    """Whether entry a already played entry b (past_opponents: a's earlier opponents, -1 for none)."""
    return (past_opponents[a] == b[:, None]).any(axis=1)


def _avoid_repeats(
    upper: np.ndarray, lower: np.ndarray, pair_event: np.ndarray, past: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Break up pairs that already met by exchanging partners with the neighbouring board.

    Each pass looks at disjoint neighbour couples (boards k, k+1 with k of one parity, alternating
    between passes) and takes the exchange (lower or upper players swapped) that leaves fewer
    repeats. Not a full Dutch system: a few repeats can remain, which real files also show.
    """
    upper, lower = upper.copy(), lower.copy()
    boards = len(upper)
    if past.shape[1] == 0:
        return upper, lower
    for attempt in range(REPEAT_FIX_PASSES):
        repeat = _met_before(upper, lower, past)
        if not repeat.any():
            break
        k = np.arange(attempt % 2, boards - 1, 2)
        k = k[(repeat[k] | repeat[k + 1]) & (pair_event[k] == pair_event[k + 1])]
        before = repeat[k].astype(np.int64) + repeat[k + 1]
        u1, l1, u2, l2 = upper[k], lower[k], upper[k + 1], lower[k + 1]
        swap_lower = _met_before(u1, l2, past).astype(np.int64) + _met_before(u2, l1, past)
        swap_upper = _met_before(u1, u2, past).astype(np.int64) + _met_before(l1, l2, past)
        take_lower = swap_lower < before
        take_upper = ~take_lower & (swap_upper < before)
        lower[k[take_lower]], lower[k[take_lower] + 1] = l2[take_lower], l1[take_lower]
        lower[k[take_upper]], upper[k[take_upper] + 1] = u2[take_upper], l1[take_upper]
    return upper, lower
