"""`python -m assets` runs the whole `ratings` command line (the installed `ratings` script)."""

from assets.runtime.cli import main

raise SystemExit(main())
