"""A straightforward per-game implementation of the same rules in plain Python: the benchmark's yardstick.

It reads the same RuleSet and produces the same list as pipeline.engine.period.rate_period, one game and
one player at a time, the way a rating officer's spreadsheet or a textbook would. It exists to
measure the engine's speed-up side by side, and as an independent check of its results
(tests/test_reference.py).
"""

from __future__ import annotations

import math
from collections import defaultdict

import polars as pl

from pipeline.months import add_months, month_index, parse_month
from pipeline.rules.model import RuleSet
from pipeline.rules.tables import DP_BY_PERCENT, PD_HIGHER_HUNDREDTHS


def expected_hundredths(rules: RuleSet, diff: int, is_white: bool) -> float:
    if rules.expectancy == "fide-table":
        pd = int(PD_HIGHER_HUNDREDTHS[min(abs(diff), 736)])
        return float(pd if diff >= 0 else 100 - pd)
    if rules.expectancy == "logistic":
        return 100.0 / (1.0 + 10.0 ** (-diff / rules.scale))
    if rules.expectancy == "elo-davidson":
        up, down = 10.0 ** (diff / rules.scale), 10.0 ** (-diff / rules.scale)
        return 100.0 * (up + rules.kappa / 2) / (down + rules.kappa + up)
    low, high = rules.sonas_clamp
    white_diff = max(low, min(high, diff if is_white else -diff))
    white_expected = rules.sonas_intercept + rules.sonas_slope * white_diff
    return 100.0 * (white_expected if is_white else 1.0 - white_expected)


def k_factor(rules: RuleSet, player: dict, year: int) -> int:
    policy = rules.k
    if policy.kind == "constant":
        return policy.value
    rating = player["rating"]
    if reached_elite(rules, player):
        return policy.elite
    birth_year = player["birth_year"]
    if policy.junior is not None and birth_year is not None:
        last = birth_year + policy.junior_until_age
        young = year <= last if policy.junior_end_of_year else year < last
        if young and (rating or 0) < policy.junior_below:
            return policy.junior
    games_total = player["games_total"]
    if games_total is not None and games_total < policy.newcomer_until_games:
        return policy.newcomer
    return policy.standard


def k_at_start(rules: RuleSet, player: dict, year: int) -> int:
    """The K a rated player starts the period with: the list's under a tiered policy, else the rule set's."""
    if rules.k.kind == "constant" or player["k"] is None:
        return k_factor(rules, player, year)
    return player["k"]


def reached_elite(rules: RuleSet, player: dict) -> bool:
    """FIDE §8.3.3: K 10 for good once a published rating has reached elite_from (2400); `ever_2400` keeps it."""
    rating = player["rating"]
    return bool(player["ever_2400"]) or (rating is not None and rating >= rules.k.elite_from)


def list_k_means_ever_2400(rules: RuleSet, player: dict) -> bool:
    """FIDE §8.3.3: K 10 stays once elite_from (2400) was reached, so a listed elite K means it was reached."""
    policy = rules.k
    if policy.kind == "constant" or policy.elite in (policy.newcomer, policy.standard, policy.junior):
        return False
    return player["k"] == policy.elite


def round_half_away(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def game_weight(rules: RuleSet, game: dict) -> float:
    by_class = rules.weights.get(game["time_control"], 0.0)
    base = game.get("tc_base_seconds")
    if not rules.weights_by_minutes or base is None:
        return by_class
    minutes = (base + 40 * (game.get("tc_increment_seconds") or 0)) / 60.0
    points = rules.weights_by_minutes
    if minutes <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if minutes <= x1:
            return y0 + (minutes - x0) * (y1 - y0) / (x1 - x0)
    return points[-1][1]


def initial_rating(rules: RuleSet, games: int, points_x2: int, opponent_sum: int) -> int:
    init = rules.initial
    if init.formula == "hypothetical-draws":
        h = init.hypothetical_games
        n, p2, total = games + h, points_x2 + h, opponent_sum + h * init.hypothetical_rating
        percent = (100 * p2 + n) // (2 * n)
        rating = (2 * total + 2 * int(DP_BY_PERCENT[percent]) * n + n) // (2 * n)
    else:
        average = opponent_sum / games
        if points_x2 > games:
            bonus = init.plus_score_per_half_point * (points_x2 - games)
        elif points_x2 == games:
            bonus = 0.0
        else:
            bonus = float(DP_BY_PERCENT[(100 * points_x2 + games) // (2 * games)])
        rating = math.floor(average + bonus + 0.5)
    if init.max_rating is not None:
        rating = min(rating, init.max_rating)
    return rating


def rate_period_reference(previous: pl.DataFrame, games: pl.DataFrame, rules: RuleSet, month: str) -> pl.DataFrame:
    """The new list, computed game by game; `previous` is a full RatingList frame, `games` as the engine reads them."""
    players = {row["player_id"]: dict(row) for row in previous.iter_rows(named=True)}
    for p in players.values():
        # Every list is read under the rule set: a rating at elite_from, or a listed elite K (a seed list states
        # only what its file says).
        p["ever_2400"] = reached_elite(rules, p) or list_k_means_ever_2400(rules, p)
    for row in games.iter_rows(named=True):
        for pid in (row["white_id"], row["black_id"]):
            if pid not in players:
                players[pid] = {
                    "player_id": pid,
                    "rating": None,
                    "change": None,
                    "k": None,
                    "k_used": None,
                    "games": 0,
                    "games_total": 0,
                    "inactive": False,
                    "delisted": False,
                    "newly_rated": False,
                    "birth_year": None,
                    "ever_2400": False,
                    "last_played": None,
                    "pending_games": 0,
                    "pending_since": None,
                    "pending": [],
                }
    year, this_index = parse_month(month)[0], month_index(month)
    next_year = parse_month(add_months(month, 1))[0]

    sums: dict[int, float] = defaultdict(float)
    event_sums: dict[tuple[int, str], float] = defaultdict(float)
    counts: dict[int, int] = defaultdict(int)
    newcomer_events: dict[int, dict[str, list]] = defaultdict(
        dict
    )  # player -> event -> [start, games, points_x2, opp_sum]
    played_unrated: set[int] = set()
    rated_rows = []

    for game in games.iter_rows(named=True):
        weight = game_weight(rules, game)
        white, black = players[game["white_id"]], players[game["black_id"]]
        white_used = game["white_rating_used"] if game["white_rating_used"] is not None else white["rating"]
        black_used = game["black_rating_used"] if game["black_rating_used"] is not None else black["rating"]
        for player, own, opponent, score, is_white in (
            (white, white_used, black_used, game["white_score"], True),
            (black, black_used, white_used, 1.0 - game["white_score"], False),
        ):
            if weight <= 0 or opponent is None:
                continue
            pid = player["player_id"]
            if player["rating"] is not None:
                rated_rows.append((pid, game["event_id"], game["game_id"], own, opponent, score, is_white, weight))
            else:
                played_unrated.add(pid)
                entry = newcomer_events[pid].setdefault(game["event_id"], [game["event_start"], 0, 0, 0])
                entry[0] = min(entry[0], game["event_start"])
                entry[1] += 1
                entry[2] += int(score * 2)
                entry[3] += opponent

    cap = rules.cap_difference
    capped_game: dict[tuple[int, str], int] = {}
    if rules.cap_mode == "once-per-event":
        for pid, event, game_id, own, opponent, *_ in rated_rows:
            diff = abs(own - opponent)
            best = capped_game.get((pid, event))
            if best is None or (diff, -game_id) > best[0]:
                capped_game[(pid, event)] = ((diff, -game_id), game_id)
    for pid, event, game_id, own, opponent, score, is_white, weight in rated_rows:
        diff = own - opponent
        if rules.cap_mode == "every-game" or (rules.cap_mode == "exempt-top" and own < rules.cap_exempt_from):
            diff = max(-cap, min(cap, diff))
        elif rules.cap_mode == "once-per-event" and capped_game[(pid, event)][1] == game_id and abs(diff) > cap:
            diff = max(-cap, min(cap, diff))
        delta = (score * 100.0 - expected_hundredths(rules, diff, is_white)) * weight
        sums[pid] += delta
        event_sums[(pid, event)] += delta
        counts[pid] += 1

    out = []
    for pid in sorted(players):
        p = dict(players[pid])
        rated_before = p["rating"] is not None
        n = counts.get(pid, 0)
        change = k_used = None
        published = delisted = False
        pool = [] if rated_before else [dict(e) for e in p["pending"]]
        pool_games = 0
        if rated_before and n:
            k_start = k_at_start(rules, p, year)
            k_used = rules.k_games_cap // n if rules.k_games_cap and k_start * n > rules.k_games_cap else k_start
            if rules.rounding == "per-period":
                change = round_half_away(k_used * sums[pid] / 100.0)
            else:
                change = sum(round_half_away(k_used * s / 100.0) for (q, _), s in event_sums.items() if q == pid)
            new = p["rating"] + change
            delisted = rules.floor is not None and new < rules.floor
            p["rating"] = None if delisted else new
            p["games_total"] = None if p["games_total"] is None else p["games_total"] + n
        elif not rated_before:
            events = sorted(newcomer_events.get(pid, {}).items(), key=lambda kv: (kv[1][0], kv[0]))
            debuted = p["last_played"] is not None or p["pending_games"] > 0
            if events and rules.initial.disregard_zero_first_event and not debuted and events[0][1][2] == 0:
                events = events[1:]
            pool_games = sum(e[1][1] for e in events)
            if pool_games:
                pool.append(
                    {
                        "month": month,
                        "games": pool_games,
                        "points_x2": sum(e[1][2] for e in events),
                        "opponent_rating_sum": sum(e[1][3] for e in events),
                    }
                )
            pool = [e for e in pool if month_index(e["month"]) >= this_index - rules.initial.pool_months + 1]
            total = sum(e["games"] for e in pool)
            if total >= rules.initial.min_games:
                first = initial_rating(
                    rules, total, sum(e["points_x2"] for e in pool), sum(e["opponent_rating_sum"] for e in pool)
                )
                if rules.floor is None or first >= rules.floor:
                    published = True
                    p["rating"], p["games_total"] = first, total
                    n_pool_used = total
        if rated_before:
            games_out = n
            change_out = change if n else 0
        elif published:
            games_out, change_out = n_pool_used, None
        else:
            games_out, change_out = pool_games, None
        if (rated_before and n) or pid in played_unrated:
            p["last_played"] = month
        if p["last_played"] is not None:
            p["inactive"] = this_index - month_index(p["last_played"]) >= rules.inactive_after_months
        keep_pool = not rated_before and not published
        p.update(
            change=change_out,
            k_used=k_used if rated_before and n else None,
            games=games_out,
            delisted=delisted,
            newly_rated=published,
            ever_2400=reached_elite(rules, p),
            pending=pool if keep_pool else [],
            pending_games=sum(e["games"] for e in pool) if keep_pool else 0,
            pending_since=min(e["month"] for e in pool) if keep_pool and pool else None,
        )
        p["k"] = k_factor(rules, p, next_year)
        out.append(p)
    return pl.DataFrame(out, schema=previous.schema, orient="row") if out else previous.clear()
