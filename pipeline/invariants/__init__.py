"""The invariants the asset checks verify, as plain functions over a store or frames."""
