"""`python -m pipeline` runs the `ratings` command line."""

from pipeline.cli import main

raise SystemExit(main())
