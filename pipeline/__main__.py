"""`python -m pipeline` runs the `ratings` command line."""

from pipeline.cli.commands import main

raise SystemExit(main())
