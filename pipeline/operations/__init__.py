"""Running the pipeline: run plans, waves, the sensor's decisions, code versions, progress."""
