"""Running Dagster from the `ratings` command: the run, the demo, the UI and the instance."""
