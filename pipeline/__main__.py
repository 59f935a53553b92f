"""`python -m pipeline` runs the `ratings` command line."""

from pipeline.cli.commands import main
from pipeline.cli.encoding import utf8_process

utf8_process()
raise SystemExit(main())
