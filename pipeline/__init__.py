"""Pure code of the rating pipeline: rule sets, rating engine, file formats, analytics, generator."""

from pipeline.malloc import limit_malloc_arenas

# Every process that runs the pipeline imports this package first (the CLI, Dagster's run and step workers, the
# `--workers` processes), before its threads allocate: see pipeline.malloc.
limit_malloc_arenas()
