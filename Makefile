# The two commands of the README: `make run` (the demo, end to end) and `make test`.
# Both create .venv and install the project on first use; nothing else needs installing.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home
export DAGSTER_DISABLE_TELEMETRY := 1

.PHONY: run test test-fast test-slow lint check-defs ui bench bench-tools clean test-tools

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/ratings demo

test: $(STAMP) test-tools lint
	$(BIN)/python -m pytest -q -n 2

# ruff (pyflakes, pycodestyle, import order, bugbear, pyupgrade, docstrings), the formatter, mypy, and
# `dg check defs` (check-defs).
lint: $(STAMP) check-defs
	$(BIN)/ruff check pipeline assets schemas tests bench
	$(BIN)/ruff format --check pipeline assets schemas tests bench
	$(BIN)/mypy

# Dagster's own check ([tool.dg] in pyproject.toml): the Definitions load as the UI loads them, from the
# environment's RATINGS_* settings, on a throw-away instance with the shipped dagster.yaml (telemetry off),
# so it needs no store, no data and no .dagster_home, and leaves none behind. About 5 s.
INSTANCE_YAML := assets/runtime/dagster.yaml
check-defs: $(STAMP)
	@home=$$(mktemp -d) && cp $(INSTANCE_YAML) "$$home/dagster.yaml" && \
	  echo "DAGSTER_HOME=$$home $(BIN)/dg check defs" && \
	  DAGSTER_HOME="$$home" VIRTUAL_ENV="$(CURDIR)/$(VENV)" $(BIN)/dg check defs; \
	  status=$$?; rm -rf "$$home"; exit $$status

# Debian's Chromium (browser tests), PostgreSQL (the instance-storage test) and Redis (the Celery
# broker of the scale-out test): the tests that need them skip with a message where they cannot be installed.
test-tools:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests..."; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
	  || echo "could not install chromium: the browser tests will be skipped"; }
	@command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "installing Debian's postgresql for the instance-storage test..."; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql) >/dev/null 2>&1 \
	  || echo "could not install postgresql: the PostgreSQL test will be skipped"; }
	@command -v redis-server >/dev/null 2>&1 || test -x /usr/bin/redis-server || { \
	  echo "installing Debian's redis-server for the Celery scale-out test..."; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server) >/dev/null 2>&1 \
	  || echo "could not install redis-server: the Celery test will be skipped"; }

# The inner loop: the pure tests, neither `integration` nor `slow`. They start no Dagster instance (no
# materialize, no DagsterInstance), no server, no browser and no process (no subprocess, multiprocessing or
# fork): tests/conftest.py fails one that does, naming what it started. About 50 s on 2 cores; pytest's last
# line gives the time, and the slowest tests (over 2 s) are listed above it.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "not slow and not integration" --durations=5 --durations-min=2

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

# `dg dev` over the demo's store (./data, or $RATINGS_STORE) and the instance `make run` writes ($DAGSTER_HOME,
# exported above): the demo's months, scenarios and runs only (`ratings run --store DIR` without DAGSTER_HOME keeps
# its runs in DIR/.dagster). On 127.0.0.1; PORT=3001 make ui for another port.
PORT ?= 3000
ui: $(STAMP)
	$(BIN)/ratings ui --port $(PORT)

bench: $(STAMP) bench-tools
	RATINGS_BENCH_RLIB="$${RATINGS_BENCH_RLIB:-$(RLIB)}" $(BIN)/python -m bench $(WORKLOADS)

# R (Debian's) and the R package PlayerRatings for engine-vs-playerratings, into bench/.cache/rlib: from CRAN, or from
# its sources where PLAYERRATINGS_SRC names them (a folder or tarball, e.g. of github.com/cran/PlayerRatings). Where
# neither can be had, that workload says so and is skipped.
RLIB := $(CURDIR)/bench/.cache/rlib
bench-tools:
	@command -v Rscript >/dev/null 2>&1 || { \
	  echo "installing Debian's R for engine-vs-playerratings..."; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends r-base-core r-base-dev) \
	  >/dev/null 2>&1 || echo "could not install R: engine-vs-playerratings will be skipped"; }
	@if command -v Rscript >/dev/null 2>&1 && ! Rscript -e 'quit(status = !requireNamespace("PlayerRatings", lib.loc = c("$(RLIB)", .libPaths()), quietly = TRUE))' >/dev/null 2>&1; then \
	  mkdir -p "$(RLIB)"; \
	  if [ -n "$(PLAYERRATINGS_SRC)" ]; then R CMD INSTALL -l "$(RLIB)" "$(PLAYERRATINGS_SRC)" >/dev/null 2>&1; \
	  else Rscript -e 'install.packages("PlayerRatings", lib = "$(RLIB)", repos = "https://cloud.r-project.org")' >/dev/null 2>&1; fi; \
	  Rscript -e 'quit(status = !requireNamespace("PlayerRatings", lib.loc = c("$(RLIB)", .libPaths()), quietly = TRUE))' >/dev/null 2>&1 \
	  || echo "could not install PlayerRatings (PLAYERRATINGS_SRC=its sources): engine-vs-playerratings will be skipped"; fi

clean:
	rm -rf data .dagster_home
