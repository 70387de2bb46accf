# Two commands on a fresh clone: `make run` (the main job) and `make test` (the suite).
# Each bootstraps .venv with python3 -m venv + pip; nothing else needs to be installed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint typecheck unit nonebot-test amritabot-test install clean bench bench-scale chromium pgbouncer

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,chroma,nonebot,amrita,bench,web]'
	touch $(STAMP)

install: $(STAMP)

# The real AmritaBot (tests/amritabot): the host pinned in tests/amritabot/requirements.txt
# (amrita from PyPI and its `ambot` command line) with this package, in a venv of its own:
# installed, AmritaBot makes every NoneBot process see an AmritaBot host (the built-in
# responder stands down), which the NoneBot session must not.
AB_VENV  := .venv-amritabot
AB_STAMP := $(AB_VENV)/.installed

$(AB_STAMP): pyproject.toml tests/amritabot/requirements.txt
	test -x $(AB_VENV)/bin/python || $(PYTHON) -m venv $(AB_VENV)
	$(AB_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AB_VENV)/bin/python -m pip install --quiet -e '.[nonebot,amrita]' -r tests/amritabot/requirements.txt
	touch $(AB_STAMP)

# The main job: a console chat bot (NoneBot2 + nonebot-adapter-console + this plugin) on
# the embedded defaults, data in data/amrita_memory_pg. Quit with ctrl+q, then ctrl+c.
run: $(STAMP)
	@echo "the CLI is $(BIN)/amrita-memory (or: source $(BIN)/activate, then amrita-memory)"
	$(BIN)/python bot.py

LINT_PATHS := amrita_memory_pg migrations tests bot.py bench

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# The browser tests (tests/browser) drive Debian's chromium through Playwright; nothing is
# downloaded at run time. Installed here when missing (as root, like CI).
CHROMIUM ?= /usr/bin/chromium
chromium:
	@test -x $(CHROMIUM) || { \
	  echo "installing Debian's chromium for the browser tests (tests/browser)"; \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-wqy-microhei >/dev/null; } \
	  || { echo "could not install chromium: run 'apt-get install -y --no-install-recommends chromium' as root" >&2; exit 1; }; \
	  test -x $(CHROMIUM) || { echo "$(CHROMIUM) still missing after the install" >&2; exit 1; }; }

# The PgBouncer tests (tests/integration/test_pgbouncer.py) start Debian's
# pgbouncer in transaction pooling mode in front of the test server. Installed when missing.
PGBOUNCER ?= /usr/sbin/pgbouncer
pgbouncer:
	@test -x $(PGBOUNCER) || command -v pgbouncer >/dev/null || { \
	  echo "installing Debian's pgbouncer for the pooler tests (tests/integration/test_pgbouncer.py)"; \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null; } \
	  || { echo "could not install pgbouncer: run 'apt-get install -y pgbouncer' as root" >&2; exit 1; }; \
	  test -x $(PGBOUNCER) || { echo "$(PGBOUNCER) still missing after the install" >&2; exit 1; }; }

# The suite in TEST_WORKERS processes (pytest-xdist), a file's tests in one of them (its
# module fixtures hold): most tests wait on servers and subprocesses, so two workers on
# two cores took the main session from 13 to 8 minutes. Each worker starts its own
# embedded server.
TEST_WORKERS ?= 2

# The NoneBot tests (tests/nonebot, nonebug) are a second pytest session: nonebug
# initialises NoneBot for its whole session, which the rest of the suite must not see.
# The real-AmritaBot tests (tests/amritabot) are a third, in their own venv (above).
test: $(STAMP) $(AB_STAMP) chromium pgbouncer
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile
	$(BIN)/python -m pytest -q -p no:cacheprovider -c tests/nonebot/pytest.ini --rootdir=. tests/nonebot
	$(AB_VENV)/bin/python -m pytest -q -c tests/amritabot/pytest.ini --rootdir=. tests/amritabot

nonebot-test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -c tests/nonebot/pytest.ini --rootdir=. tests/nonebot

amritabot-test: $(AB_STAMP)
	$(AB_VENV)/bin/python -m pytest -q -c tests/amritabot/pytest.ini --rootdir=. tests/amritabot

# The L2 benchmark (not a test): ours vs the reference's approach, side by side.
# Defaults: 100k memories, 1000 partitions, 384-d; see bench/bench_l2.py --help.
bench: $(STAMP)
	$(BIN)/python bench/bench_l2.py $(BENCH_ARGS)

# The scale bench (not a test): every figure from 10k to 1M memories, a table and a plot
# (docs/performance.md, "From 10k to a million memories"). About two hours on 2 busy
# cores, most of it at 1M; SCALE_ARGS="--sizes 10k,100k" for minutes.
SCALE_ARGS ?= --sizes 10k,100k,1M --png docs/scale.png
bench-scale: $(STAMP)
	$(BIN)/python bench/bench_scale.py $(SCALE_ARGS)

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

clean:
	rm -rf $(VENV) $(AB_VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
