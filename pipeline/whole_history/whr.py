"""Whole-History Rating (Coulom 2008) by month: a rating and a deviation for every player at every month they played.

Source: R. Coulom, "Whole-History Rating: A Bayesian Rating System for Players of Time-Varying Strength",
Computers and Games 2008 (LNCS 5131); the model is its section 3, the gradient and Hessian its Appendix A, their
tridiagonal LU decomposition Appendix B and the covariance's diagonal Appendix C. The model:

- Bradley-Terry: player i beats j with probability gamma_i / (gamma_i + gamma_j), gamma = e^r, so r in natural
  units is Elo x ln 10 / 400. A game's score s (1, 1/2, 0) enters as s wins and 1 - s losses, so a draw is half a
  win and half a loss (Coulom's data, Go, has almost none; for chess this is the usual reading, as in Edo's).
- Each player's r is a Wiener process: r(t2) - r(t1) ~ N(0, |t2 - t1| w2). Here t counts months (Coulom's unit
  is the day): a player has one r per month they play, and w2 is in Elo^2 per month.
- The prior: `virtual_draws` draws, in the first month a player plays, against a virtual player rated
  `init_rating` (Coulom: a virtual draw against a virtual player of rating 0; `init_rating` is that 0). A player of
  `seeds` (a scenario's seed list) draws instead against a virtual player at their seed rating.

The estimate is the maximum a posteriori of every r at once; the deviation of each is the square root of the
diagonal of the inverse of the negative Hessian of the player's own log-posterior, the others held fixed
(Appendix C). Newton's method runs per player over the player's months, whose Hessian
is tridiagonal (Appendix A), solved in O(months) (Appendix B).

**Vectorised across players (Jacobi, not Gauss-Seidel).** Coulom updates players one after another, each
seeing the others' new ratings. Here every player of a sweep is updated at once from the same opponents'
ratings: a plain Newton step would then overshoot by up to 2x (two players who only meet each other both take
the whole correction), so a sweep's step uses the games' curvature doubled. For one game's 2x2 block
h [[1, -1], [-1, 1]] <= 2h I, so the doubled diagonal bounds the whole Hessian from above and the simultaneous
step cannot overshoot in the quadratic model; the time coupling (the Wiener prior) is kept exact, so a
player's months still move together. Only the path to the maximum differs from Coulom's: the maximum, and the
deviations (computed from the undoubled Hessian), are his.

**Storage and incremental updates.** Player-months ("nodes") and games are appended month by month in flat
NumPy arrays (month-major, so a month is one contiguous slice); each node links to the same player's previous
and next node, and the tridiagonal solves run over the chains month by month, vectorised over the players of a
month. `add_month` appends a month and runs `sweeps` Newton sweeps over that month's players only (all their
months), warm-started from the previous estimates (a new month starts from the player's latest rating):
Coulom's incremental update (Newton iterations on the players of the new games, not a fit from scratch). `fit`
sweeps every player until no rating moves by more than `tolerance`.

**The two lists of a month M.** `list_at(M)` is every player's estimate at their last month up to M, with the
deviation widened by the Wiener variance of the months since: called right after `add_month(M)` it is the list
of M as it stood after M (what a monthly run publishes); called later it is the list of M as it stands now, from
every game added since. `history()` is every player-month as it stands now.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import polars as pl
from pydantic import Field

from pipeline.systems import SystemParams

#: Elo points per natural unit of r (gamma = e^r = 10^(Elo/400)).
ELO_PER_NAT = 400.0 / math.log(10.0)
#: The largest move of one rating in one sweep, in natural units (~347 Elo): far from the estimate the logistic's
#: curvature vanishes, so an unclipped Newton step of a player who won everything could throw r very far.
MAX_STEP = 2.0


class WhrParams(SystemParams):
    """The defaults w2 10 and 5 virtual draws were tuned by deviance on the Kaggle 2011 follow-up games, train to
    month 99, validate 100-103 (docs/results.md); w2 3 to 30 differ by less than 0.00003 there.
    """

    init_rating: float = Field(
        1500.0, description="the virtual opponent's rating (the prior's centre), and the rating of a player never seen"
    )
    w2: float = Field(
        10.0, gt=0, description="Wiener variance of a rating per month, Elo^2 (Coulom's w^2, per day in the paper)"
    )
    virtual_draws: float = Field(
        5.0, gt=0, description="the prior: draws in a player's first month against a virtual player at init_rating"
    )
    sweeps: int = Field(3, ge=0, description="Newton sweeps over a month's players when the month is added")
    max_sweeps: int = Field(1000, ge=1, description="a full fit's most sweeps over every player")
    tolerance: float = Field(
        0.01, gt=0, description="a full fit stops when no rating moved by more than this (Elo) in a sweep"
    )
    incremental: bool = Field(
        False,
        description="evaluation: add the training months one by one with `sweeps` sweeps each, no final fit "
        "(as a monthly run would); false: a full fit of the training months",
    )


# -- the formulas ------------------------------------------------------------------------------


def bradley_terry(diff: np.ndarray) -> np.ndarray:
    """P(win) = gamma_i / (gamma_i + gamma_j) = 1 / (1 + e^-(r_i - r_j)) (Coulom 2008, section 3, Bradley-Terry)."""
    return 1.0 / (1.0 + np.exp(-diff))


def game_terms(diff: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A game's contribution to the first player's log-likelihood gradient and curvature: s - P and P (1 - P),
    from s ln P + (1 - s) ln (1 - P) (Coulom 2008, Appendix A, with a score s in place of a win count).
    """
    p = bradley_terry(diff)
    return score - p, p * (1.0 - p)


def virtual_draw_terms(r: np.ndarray, draws: float) -> tuple[np.ndarray, np.ndarray]:
    """The prior's gradient and curvature at a player's first month: `draws` draws against a virtual player at
    r = 0 (Coulom 2008, section 3, the prior). The Ruby gem goshrine/whole_history_rating counts a virtual draw as
    one win and one loss (`draws` = 2 here); the PyPI whole-history-rating's initial_prior_wins k is `draws` = 2k.
    """
    p = bradley_terry(r)
    return draws * (0.5 - p), draws * p * (1.0 - p)


def wiener_precision(gap_months: np.ndarray, w2_elo: float) -> np.ndarray:
    """1 / Var(r(t2) - r(t1)) = 1 / (|t2 - t1| w2), w2 converted from Elo^2 to natural units (Coulom 2008,
    section 3, the Wiener process; Appendix A, the prior's terms of the gradient and Hessian).
    """
    return 1.0 / (np.abs(gap_months) * w2_elo / ELO_PER_NAT**2)


def expected_score(white: np.ndarray, black: np.ndarray, advantage: np.ndarray) -> np.ndarray:
    """White's expected score from ratings in Elo: the Bradley-Terry probability, 1 / (1 + 10^(-(Rw - Rb + a)/400))."""
    return bradley_terry((white - black + advantage) / ELO_PER_NAT)


def fit_moved(step: float, previous: float) -> float:
    """How far the ratings may still be from where the sweeps converge, from the largest move of the last sweep and
    of the one before: the move itself, or step x rho / (1 - rho) when larger, rho = step / previous (the bound on
    the error left of an iteration that converges linearly at rate rho: the moves still to come, a geometric series).

    Damped simultaneous steps converge slowly where players are linked through long chains of games (rho near 1), and
    many sweeps then each move a rating by less than the tolerance while together they move it by much more: a
    chain of 200 players stopped at 0.01 Elo a sweep 7 Elo short. Where rho <= 1/2 the bound is the move itself, so a
    fit that converges fast stops at the same sweep as it did on the move alone.
    """
    if step >= previous:  # not (yet) contracting: no bound
        return math.inf if step > 0 else 0.0
    rho = step / previous
    return max(step, step * rho / (1.0 - rho))


class Fit(NamedTuple):
    """What WholeHistory.fit did: the sweeps run, whether the ratings converged within the tolerance (else the fit
    stopped at max_sweeps), and how far they may still be from it (fit_moved, Elo).
    """

    sweeps: int
    converged: bool
    moved: float

    def warning(self) -> str | None:
        """What a user of a fit that stopped at max_sweeps must be told: its ratings are not the converged ones."""
        if self.converged:
            return None
        far = "an unknown distance" if math.isinf(self.moved) else f"about {self.moved:.3g} Elo"
        sweeps = f"{self.sweeps} sweep{'s' if self.sweeps != 1 else ''}"
        return (
            f"the whole-history fit stopped at max_sweeps ({sweeps}) before converging: its ratings may be {far} from "
            "the converged ones; raise max_sweeps (--set max_sweeps=N)"
        )


@dataclass(frozen=True)
class Chains:
    """A set of whole players' nodes, as the tridiagonal solves walk them: local indices in node (so month) order.

    `prev` / `next`: the local index of the same player's previous / next node (-1: none); `coupling`: the Wiener
    precision between a node and its previous one (0 for a first node); `months`: (start, stop) slices of the
    local indices, one per month, ascending.
    """

    prev: np.ndarray
    next: np.ndarray
    coupling: np.ndarray
    months: list[tuple[int, int]]

    def coupling_next(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """For the nodes start..stop (one month): the local index of each one's next node, the node itself where it
        has none, and the coupling to it, 0 where it has none (so a product with it reads a placeholder harmlessly).
        """
        nxt = self.next[start:stop]
        has = nxt >= 0
        after = np.where(has, nxt, start)
        return after, np.where(has, self.coupling[after], 0.0)


def solve_chains(chains: Chains, diagonal: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The x of A x = rhs for every chain at once, A tridiagonal with `diagonal` and -coupling beside it; `diagonal`
    and `rhs` are overwritten (the elimination's pivots and right-hand side: no copies of every node's size).

    Gaussian elimination without pivoting down each chain then back substitution (the Thomas algorithm; Coulom
    2008, Appendix B, the LU decomposition of the Hessian), month by month, vectorised over a month's nodes.
    A is diagonally dominant here (positive game and prior curvatures), so no pivoting is needed.
    """
    pivot, y = diagonal, rhs
    for start, stop in chains.months:
        prev = chains.prev[start:stop]
        has = prev >= 0
        at = np.flatnonzero(has) + start
        before = prev[has]
        c = chains.coupling[at]
        pivot[at] -= c * c / pivot[before]
        y[at] += c * y[before] / pivot[before]
    x = np.zeros_like(y)  # a last node reads x of a placeholder index times a zero coupling: never garbage
    for start, stop in reversed(chains.months):
        after, c_next = chains.coupling_next(start, stop)
        x[start:stop] = (y[start:stop] + c_next * x[after]) / pivot[start:stop]
    return x


def chain_inverse_diagonal(chains: Chains, diagonal: np.ndarray) -> np.ndarray:
    """diag(A^-1) for every chain: 1 / (f_i + b_i - a_ii), f and b the pivots of elimination from the chain's start
    and from its end (Meurant 1992, SIAM J. Matrix Anal. Appl. 13(3); Coulom 2008, Appendix C computes the same diagonal
    through the LU factors).
    """
    forward = diagonal.copy()
    for start, stop in chains.months:
        prev = chains.prev[start:stop]
        at = np.flatnonzero(prev >= 0) + start
        c = chains.coupling[at]
        forward[at] -= c * c / forward[prev[prev >= 0]]
    backward = diagonal.copy()
    for start, stop in reversed(chains.months):
        nxt = chains.next[start:stop]
        has = nxt >= 0
        at = np.flatnonzero(has) + start
        c = chains.coupling[nxt[has]]
        backward[at] -= c * c / backward[nxt[has]]
    forward += backward
    del backward
    forward -= diagonal
    return np.divide(1.0, forward, out=forward)


# -- the history -------------------------------------------------------------------------------


def _grown(array: np.ndarray, needed: int) -> np.ndarray:
    """`array` with room for `needed` entries (capacity doubles, so appending month by month stays linear)."""
    if needed <= array.shape[0]:
        return array
    bigger = np.empty(max(needed, 2 * array.shape[0], 1024), dtype=array.dtype)
    bigger[: array.shape[0]] = array
    return bigger


#: The most games a sweep's terms take at once (`_Selection.blocks`): the temporaries of a full sweep at FIDE scale
#: (18 M games) would otherwise take about 1.5 GB.
BLOCK_GAMES = 1 << 20


def _blocks(game_at: np.ndarray, node_at: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Consecutive whole months (`game_at` / `node_at`: where each month's games and nodes start, and the end) in
    blocks of at most BLOCK_GAMES games (a larger month alone): (game start, stop, node start, stop).
    """
    blocks, start = [], 0
    for month in range(1, len(game_at)):
        if game_at[month] - game_at[start] > BLOCK_GAMES and month - 1 > start:
            blocks.append((start, month - 1))
            start = month - 1
    blocks.append((start, len(game_at) - 1))
    return [
        (int(game_at[a]), int(game_at[b]), int(node_at[a]), int(node_at[b]))
        for a, b in blocks
        if game_at[b] > game_at[a]
    ]


@dataclass
class _Selection:
    """Whole players' nodes and the games touching them, prepared once for several sweeps.

    `games`, `white` and `black` are None for every player (the selection is the whole history: a game's local
    indices are its global ones). `blocks` cut the games into whole months, (game start, stop, local node start,
    stop): a node's games are all in its own month, so each node's sums run over its games in the same order as
    in one pass, bit for bit, while a block's temporaries stay at BLOCK_GAMES games.
    """

    nodes: np.ndarray | slice  # global node ids, ascending (slice(0, n): everybody, read in place)
    size: int
    chains: Chains
    first: np.ndarray  # local indices of the players' first nodes (the virtual draws)
    games: np.ndarray | None  # global game indices touching a selected node
    white: np.ndarray | None  # local index of the game's White node, or len(nodes) (a dummy slot) when not selected
    black: np.ndarray | None
    blocks: list[tuple[int, int, int, int]]


@dataclass
class WholeHistory:
    """Every player-month estimate so far; `add_month` appends a month, `fit` converges (module docstring)."""

    params: WhrParams
    players: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema={"player_id": pl.Int64, "player": pl.Int64})
    )
    n_nodes: int = 0
    n_games: int = 0
    months: list[int] = field(default_factory=list)
    month_first_node: list[int] = field(default_factory=list)
    month_first_game: list[int] = field(default_factory=list)
    last_node: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    node_player: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int32))
    node_month: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int32))
    node_prev: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int32))
    node_next: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int32))
    node_games: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int32))
    r: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.float64))
    var: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.float64))
    game_white: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int32))
    game_black: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int32))
    game_score: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.float32))
    game_colour: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.bool_))
    #: The prior's centre of players not seen yet (player_id, rating in Elo); others: init_rating.
    seeds: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema={"player_id": pl.Int64, "rating": pl.Float64})
    )
    player_prior: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.float64))
    #: Each player's games so far (the list's `games`).
    player_games: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    #: The nodes whose estimate the last add_month or fit set (None: every node): what a stored month must hold.
    changed: np.ndarray | None = None
    #: What the last fit did, when it came after the last add_month (None: no fit since).
    fitted: Fit | None = None

    # -- building ------------------------------------------------------------------------------

    def add_month(self, month: int, games: pl.DataFrame, sweeps: int | None = None) -> None:
        """Append `month`'s games (white_id, black_id, white_score, optional colour_known) and run `sweeps` (default
        params.sweeps) Newton sweeps over its players, warm-started. Months must come in ascending order.
        """
        if self.months and month <= self.months[-1]:
            raise ValueError(f"month {month} is not after the last month added ({self.months[-1]})")
        self.fitted = None
        if games.height and (games["white_id"] == games["black_id"]).any():
            raise ValueError("a game has the same player on both sides")
        white_ids = games["white_id"].cast(pl.Int64).to_numpy()
        black_ids = games["black_id"].cast(pl.Int64).to_numpy()
        ids = pl.Series("player_id", np.unique(np.concatenate([white_ids, black_ids])), dtype=pl.Int64)
        known = ids.to_frame().join(self.players, on="player_id", how="left", maintain_order="left")
        fresh = known.filter(pl.col("player").is_null()).select("player_id")
        start_player = self.players.height
        if fresh.height:
            fresh = fresh.with_columns(player=pl.int_range(start_player, start_player + fresh.height, dtype=pl.Int64))
            self.players = pl.concat([self.players, fresh])
            self.last_node = _grown(self.last_node, self.players.height)
            self.last_node[start_player : self.players.height] = -1
            seeded = fresh.join(self.seeds, on="player_id", how="left", maintain_order="left")["rating"]
            self.player_prior = _grown(self.player_prior, self.players.height)
            self.player_prior[start_player : self.players.height] = (
                seeded.fill_null(self.params.init_rating).to_numpy() - self.params.init_rating
            ) / ELO_PER_NAT
            self.player_games = _grown(self.player_games, self.players.height)
            self.player_games[start_player : self.players.height] = 0
        month_players = (
            ids.to_frame().join(self.players, on="player_id", how="left", maintain_order="left")["player"].to_numpy()
        )
        # Sort the month's players by internal index so that a game's node is a searchsorted away.
        order = np.argsort(month_players, kind="stable")
        month_players = month_players[order]
        sorted_ids = ids.to_numpy()[order]
        count = month_players.shape[0]
        first = self.n_nodes
        nodes = np.arange(first, first + count, dtype=np.int64)
        total = first + count
        for name in ("node_player", "node_month", "node_prev", "node_next", "node_games", "r", "var"):
            setattr(self, name, _grown(getattr(self, name), total))
        prev = self.last_node[month_players]
        self.node_player[first:total] = month_players
        self.node_month[first:total] = month
        self.node_prev[first:total] = prev
        self.node_next[first:total] = -1
        has_prev = prev >= 0
        self.node_next[prev[has_prev]] = nodes[has_prev]
        # Warm start: a player's new month starts at their latest estimate; a new player at the prior's centre.
        self.r[first:total] = np.where(has_prev, self.r[np.maximum(prev, 0)], self.player_prior[month_players])
        self.var[first:total] = np.nan
        self.last_node[month_players] = nodes
        # The id -> node of this month, through the sorted ids.
        id_order = np.argsort(sorted_ids)
        by_id = sorted_ids[id_order]  # searched in place of a sorter: 3-4 times faster
        white_nodes = first + id_order[np.searchsorted(by_id, white_ids)]
        black_nodes = first + id_order[np.searchsorted(by_id, black_ids)]
        self.node_games[first:total] = np.bincount(
            np.concatenate([white_nodes, black_nodes]) - first, minlength=count
        ).astype(np.int32)
        self.player_games[month_players] += self.node_games[first:total]
        g0, g1 = self.n_games, self.n_games + games.height
        for name in ("game_white", "game_black", "game_score", "game_colour"):
            setattr(self, name, _grown(getattr(self, name), g1))
        self.game_white[g0:g1] = white_nodes
        self.game_black[g0:g1] = black_nodes
        self.game_score[g0:g1] = games["white_score"].cast(pl.Float32).to_numpy()
        colour = (
            games["colour_known"].cast(pl.Boolean).fill_null(True).to_numpy()
            if "colour_known" in games.columns
            else np.ones(games.height, dtype=np.bool_)
        )
        self.game_colour[g0:g1] = colour
        self.n_nodes, self.n_games = total, g1
        self.months.append(month)
        self.month_first_node.append(first)
        self.month_first_game.append(g0)
        steps = self.params.sweeps if sweeps is None else sweeps
        self.changed = nodes  # the new nodes' warm start
        if steps and count:
            selection = self._select(month_players)
            for _ in range(steps):
                self._sweep(selection)
            self._update_variance(selection)
            assert isinstance(selection.nodes, np.ndarray)  # a subset
            self.changed = selection.nodes

    def fit(self, max_sweeps: int | None = None, tolerance: float | None = None) -> Fit:
        """Newton sweeps over every player until the ratings are within `tolerance` Elo of where the sweeps converge
        (fit_moved), at most `max_sweeps`: the sweeps run and whether that was reached.
        """
        limit = self.params.max_sweeps if max_sweeps is None else max_sweeps
        tol = (self.params.tolerance if tolerance is None else tolerance) / ELO_PER_NAT
        if self.n_nodes == 0:
            self.fitted = Fit(0, True, 0.0)
            return self.fitted
        selection = self._select(None)
        done, converged, previous, left = 0, False, math.inf, math.inf
        for done in range(1, limit + 1):  # noqa: B007 (the count is the result)
            step = self._sweep(selection)
            left = fit_moved(step, previous)
            if left <= tol:
                converged = True
                break
            previous = step
        self._update_variance(selection)
        self.changed = None
        self.fitted = Fit(done, converged, left * ELO_PER_NAT)
        return self.fitted

    # -- the Newton sweep ----------------------------------------------------------------------

    def _select(self, players: np.ndarray | None) -> _Selection:
        """All nodes of `players` (None: everybody) and the games touching them."""
        n, n_games = self.n_nodes, self.n_games
        nodes: np.ndarray | slice
        if players is None:
            # Every node: global indices are local ones, and the links are the history's own (read, not copied).
            nodes, size = slice(0, n), n
            prev, nxt = self.node_prev[:n], self.node_next[:n]
            games = white = black = None
            game_at, node_at = np.asarray([*self.month_first_game, n_games]), np.asarray([*self.month_first_node, n])
        else:
            chosen = np.zeros(self.players.height, dtype=np.bool_)
            chosen[players] = True
            nodes = np.flatnonzero(chosen[self.node_player[:n]])
            size = nodes.shape[0]
            local = np.full(n + 1, size, dtype=np.int32)  # n: the -1 of prev/next, mapped to the dummy
            local[nodes] = np.arange(size, dtype=np.int32)
            # The games touching a selected node, found a block at a time (no temporaries of every game's size).
            found = []
            for g0 in range(0, n_games, BLOCK_GAMES):
                g1 = min(g0 + BLOCK_GAMES, n_games)
                touched = (local[self.game_white[g0:g1]] < size) | (local[self.game_black[g0:g1]] < size)
                found.append(np.flatnonzero(touched) + g0)
            games = np.concatenate(found) if found else np.empty(0, dtype=np.int64)
            white, black = local[self.game_white[games]], local[self.game_black[games]]
            prev_global, next_global = self.node_prev[nodes], self.node_next[nodes]
            prev = np.where(prev_global >= 0, local[np.where(prev_global >= 0, prev_global, n)], -1).astype(np.int32)
            nxt = np.where(next_global >= 0, local[np.where(next_global >= 0, next_global, n)], -1).astype(np.int32)
            del local
            game_at = np.searchsorted(games, np.asarray([*self.month_first_game, n_games]))
            node_at = np.searchsorted(nodes, np.asarray([*self.month_first_node, n]))
        months = self.node_month[nodes]
        month_slices = [(int(a), int(b)) for a, b in zip(node_at[:-1], node_at[1:], strict=True) if b > a]
        coupling = np.zeros(size)
        for start, stop in month_slices:  # a month at a time: no temporaries of every node's size
            at = np.flatnonzero(prev[start:stop] >= 0) + start
            gap = months[at] - months[prev[at]]
            coupling[at] = wiener_precision(np.maximum(gap, 1), self.params.w2)
        chains = Chains(prev=prev, next=nxt, coupling=coupling, months=month_slices)
        first = np.flatnonzero(prev < 0)
        return _Selection(nodes, size, chains, first, games, white, black, _blocks(game_at, node_at))

    def _terms(self, s: _Selection) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gradient of the log-posterior, the games' curvature and the other curvature (prior), per selected node."""
        size = s.size
        gradient, games_h = np.zeros(size), np.zeros(size)
        advantage = self.params.white_advantage / ELO_PER_NAT
        for g0, g1, n0, n1 in s.blocks:
            games: slice | np.ndarray = slice(g0, g1) if s.games is None else s.games[g0:g1]
            white_nodes, black_nodes = self.game_white[games], self.game_black[games]
            if s.white is None or s.black is None:
                local_white, local_black = white_nodes, black_nodes
            else:
                local_white, local_black = s.white[g0:g1], s.black[g0:g1]
            diff = self.r[white_nodes] - self.r[black_nodes]
            del white_nodes, black_nodes
            diff += np.where(self.game_colour[games], advantage, 0.0)
            residual, curvature = game_terms(diff, self.game_score[games].astype(np.float64))
            del diff
            # A side not selected (the dummy slot, size) lands on the block's own dummy slot, n1 - n0.
            at_white = np.minimum(local_white, n1) - n0
            at_black = np.minimum(local_black, n1) - n0
            width = n1 - n0 + 1
            gradient[n0:n1] += np.bincount(at_white, residual, minlength=width)[:-1]
            gradient[n0:n1] -= np.bincount(at_black, residual, minlength=width)[:-1]
            games_h[n0:n1] += np.bincount(at_white, curvature, minlength=width)[:-1]
            games_h[n0:n1] += np.bincount(at_black, curvature, minlength=width)[:-1]
        r_local = self.r[s.nodes]
        prior_h = np.zeros(size)
        centre = self.player_prior[self.node_player[s.first if isinstance(s.nodes, slice) else s.nodes[s.first]]]
        g_virtual, h_virtual = virtual_draw_terms(r_local[s.first] - centre, self.params.virtual_draws)
        gradient[s.first] += g_virtual
        prior_h[s.first] += h_virtual
        chains = s.chains
        # The Wiener prior between each node and the one before, a month at a time (each node's terms in the order of
        # one pass over every node: its own link first, its next node's when that month comes).
        for start, stop in chains.months:
            at = np.flatnonzero(chains.prev[start:stop] >= 0) + start
            before = chains.prev[at]
            coupling = chains.coupling[at]
            pull = coupling * (r_local[at] - r_local[before])
            gradient[at] -= pull
            gradient[before] += pull
            prior_h[at] += coupling
            prior_h[before] += coupling
        return gradient, games_h, prior_h

    def _sweep(self, s: _Selection) -> float:
        """One simultaneous Newton step for the selected players (games' curvature doubled: module docstring)."""
        gradient, games_h, prior_h = self._terms(s)
        diagonal = np.multiply(games_h, 2.0, out=games_h)
        diagonal += prior_h
        del prior_h
        step = np.clip(solve_chains(s.chains, diagonal, gradient), -MAX_STEP, MAX_STEP)
        del diagonal, gradient
        self.r[s.nodes] += step
        return float(np.abs(step).max()) if step.size else 0.0

    def _update_variance(self, s: _Selection) -> None:
        _, games_h, prior_h = self._terms(s)
        games_h += prior_h
        del prior_h
        self.var[s.nodes] = chain_inverse_diagonal(s.chains, games_h)

    # -- reading -------------------------------------------------------------------------------

    def _nodes_frame(self, stop: int) -> pl.DataFrame:
        ids = self.players.sort("player")["player_id"].to_numpy()
        return pl.DataFrame(
            {
                "player_id": ids[self.node_player[:stop]],
                "month": self.node_month[:stop].astype(np.int64),
                "rating": self.params.init_rating + ELO_PER_NAT * self.r[:stop],
                "deviation": ELO_PER_NAT * np.sqrt(self.var[:stop]),
                "games": self.node_games[:stop].astype(np.int64),
            }
        )

    def history(self) -> pl.DataFrame:
        """Every player-month as it stands now: player_id, month, rating, deviation (Elo), games that month."""
        return self._nodes_frame(self.n_nodes).sort("player_id", "month")

    def list_at(self, month: int) -> pl.DataFrame:
        """Every player seen up to `month`: player_id, rating and deviation of their last month up to it (the
        deviation widened by the Wiener variance of the months since), last_month, games up to it. Right after
        add_month(month): the list as it stood then; later: as it stands now.
        """
        if self.months and month >= self.months[-1]:
            # Every player's last node so far is their last up to `month`: read at the players' last nodes.
            seen = self.players.height  # every player has a node (players join with their first games)
            last = self.last_node[:seen]
            return list_of_last(
                pl.DataFrame(
                    {
                        "player_id": self.players["player_id"],
                        "rating": self.params.init_rating + ELO_PER_NAT * self.r[last],
                        "deviation": ELO_PER_NAT * np.sqrt(self.var[last]),
                        "last_month": self.node_month[last].astype(np.int64),
                        "games": self.player_games[:seen],
                    }
                ),
                month,
                self.params.w2,
            )
        stop = int(np.searchsorted(np.asarray(self.months), month, side="right"))
        end = self.month_first_node[stop] if stop < len(self.months) else self.n_nodes
        # Node ids are month-major, so a player's last row is their latest month up to `month`.
        return list_of_last(last_rows(self._nodes_frame(end)), month, self.params.w2)


def last_rows(nodes: pl.DataFrame) -> pl.DataFrame:
    """Each player's last row of `nodes` (player_id, month, rating, deviation, games; a player's rows in month order):
    player_id, rating, deviation, last_month, and games summed.
    """
    return nodes.group_by("player_id").agg(
        pl.col("rating").last(),
        pl.col("deviation").last(),
        pl.col("month").last().alias("last_month"),
        pl.col("games").sum(),
    )


def list_of_last(last: pl.DataFrame, month: int, w2: float) -> pl.DataFrame:
    """The list of `month` from each player's last estimate up to it (last_rows): the deviation widened by the Wiener
    variance of the months since, by player_id.
    """
    return last.with_columns(
        deviation=(pl.col("deviation").pow(2) + w2 * (month - pl.col("last_month")).cast(pl.Float64)).sqrt()
    ).sort("player_id")


def monthly_games(games: pl.DataFrame, column: str = "period") -> Iterator[tuple[int, pl.DataFrame]]:
    """(month, games) by ascending `column`, the months' integer index (consecutive months differ by 1)."""
    for (month,), part in games.sort(column, maintain_order=True).group_by(column, maintain_order=True):
        yield int(month), part


def rate_history(games: pl.DataFrame, params: WhrParams, column: str = "period") -> WholeHistory:
    """The whole history of `games` (by month in `column`): added month by month, then, unless `incremental`, a full
    fit to `tolerance`; with `incremental`, the `sweeps` of each month only.
    """
    history = WholeHistory(params)
    for month, part in monthly_games(games, column):
        history.add_month(month, part, sweeps=params.sweeps if params.incremental else 0)
    if not params.incremental:
        history.fit()
    return history


def predict(frozen: pl.DataFrame, games: pl.DataFrame, params: WhrParams) -> pl.Series:
    """White's expected score in every game from a list (`list_at`: player_id, rating); players it lacks are rated
    init_rating. The White advantage applies where `colour_known` is true (or the column is absent).
    """
    ratings = frozen.select("player_id", "rating")
    frame = games.select(
        pl.col("white_id").cast(pl.Int64),
        pl.col("black_id").cast(pl.Int64),
        (
            pl.col("colour_known").cast(pl.Boolean).fill_null(True) if "colour_known" in games.columns else pl.lit(True)
        ).alias("colour_known"),
    )
    for side in ("white", "black"):
        frame = frame.join(
            ratings.rename({"player_id": f"{side}_id", "rating": f"{side}_rating"}),
            on=f"{side}_id",
            how="left",
            maintain_order="left",
        ).with_columns(pl.col(f"{side}_rating").fill_null(params.init_rating))
    advantage = np.where(frame["colour_known"].to_numpy(), params.white_advantage, 0.0)
    expected = expected_score(frame["white_rating"].to_numpy(), frame["black_rating"].to_numpy(), advantage)
    return pl.Series("white_expected", expected)
