"""Running the pipeline: run plans, waves, the sensor's decisions, the Dagster instance of a store, progress."""
