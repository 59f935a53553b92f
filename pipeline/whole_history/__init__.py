"""Whole-history rating systems: every player's rating at every month re-estimated from all games (issue 39).

They do not fit `pipeline.systems`' period interface (previous state + one period's games -> new state): a
whole-history estimate of a past month moves when later games arrive, so the state is the whole history of
estimates (one per player and month played), not one row per player. `whr` is Coulom's Whole-History Rating.
"""
