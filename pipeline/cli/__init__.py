"""The `ratings` command line of pure code, and the options of the commands that run Dagster."""
