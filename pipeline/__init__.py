"""Pure code of the rating pipeline: rule sets, rating engine, file formats, analytics, generator."""

from pipeline.malloc import keep_polars_freed_memory, limit_malloc_arenas

# Every process that runs the pipeline imports this package (the CLI, Dagster's webserver, daemon, run and step
# workers, the `--workers` processes), most before they start threads or load Polars: see pipeline.malloc.
limit_malloc_arenas()
keep_polars_freed_memory()
