"""Named benchmark workloads (`make bench`): wall time, throughput and peak memory, written to bench/results.json."""

# The pipeline's process settings (malloc arenas, Polars' allocator) are made when it is imported, and Polars'
# allocator reads its setting when Polars loads: a workload measures what `ratings` runs only when this comes first.
import pipeline  # noqa: F401
