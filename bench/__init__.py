"""Named benchmark workloads (`make bench`): wall time, throughput and peak memory, written to bench/results.json."""
