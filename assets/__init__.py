"""Thin Dagster definitions over the pure pipeline: assets, checks, IO manager, jobs."""
