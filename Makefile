# Pool Portal: the two commands that matter are `make dev` and `make test` (see README.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
PORT ?= 8000
# The demo backends (pools/demo/backends.yaml) are simulated clusters at http://127.0.0.1:8001/clusters/<backend>.
KUBESIM_PORT ?= 8001
export UV_PROJECT_ENVIRONMENT := $(VENV)
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

.PHONY: install bytecode dev test test-loaded fuzz scale-test soak dev-proof bench fleet lint services clean test-peers chromium kubectl editor

install: $(VENV)/.installed bytecode editor test-peers

# Bytecode is compiled here, not at run time: a user's environment may forbid writing it
# (PYTHONDONTWRITEBYTECODE, a read-only install), and then every start would compile every module again
# (a CLI call: seconds instead of under one; bench/bench_cli.py). The stamp depends on this Makefile so an
# existing environment is compiled once after this rule changes.
$(VENV)/.installed: pyproject.toml uv.lock Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@test -x $(UV) || $(PY) -m pip install --quiet --disable-pip-version-check uv==0.13.8
	$(UV) sync --frozen --inexact --quiet --compile-bytecode
	@touch $@

# The project's own packages; compileall skips what is up to date, so this is quick when nothing changed.
PACKAGES := portal configs access teams clusters pools workflows usage quotas notifications selfservice kubesim soak
bytecode: $(VENV)/.installed
	@$(PY) -m compileall -q -j0 $(PACKAGES)
	@# python-hcl2's grammar, compiled once into its package (about 2 s) rather than at the first Terraform import
	@$(PY) -c "import hcl2.parser; hcl2.parser.parser()"

dev: $(VENV)/.installed editor  # no test peer: the embedded default needs none
	$(PY) manage.py migrate --noinput -v0
	DEMO_CLUSTERS_URL=http://127.0.0.1:$(KUBESIM_PORT) $(PY) manage.py seed_demo
	@# The simulated clusters, the web server, both watchers and the periodic jobs, supervised together
	@# (portal/devserver.py); Ctrl-C stops them all. Logs: var/*.log.
	$(PY) manage.py devserver --port $(PORT) --kubesim-port $(KUBESIM_PORT)

# The code editor of the admin and self-service pages (CodeMirror 6, frontend/editor): bundled into one
# static file (static/portal/vendor/editor.js, not committed) that the pages load from /static/, never from
# the internet. Needs Node.js 20+ with npm; `npm ci` runs only when the lock file changed, the build only
# when an input did.
EDITOR := frontend/editor
EDITOR_BUNDLE := static/portal/vendor/editor.js
editor: $(EDITOR_BUNDLE)

$(EDITOR)/node_modules/.installed: $(EDITOR)/package.json $(EDITOR)/package-lock.json
	@command -v npm >/dev/null || { echo "error: Node.js 20+ with npm is needed to build the code editor" >&2; exit 1; }
	cd $(EDITOR) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(EDITOR_BUNDLE): $(EDITOR)/node_modules/.installed $(EDITOR)/build.mjs $(wildcard $(EDITOR)/src/*.js)
	cd $(EDITOR) && node build.mjs

# Test peers beyond Python: the OIDC provider (node, tests/oidc), axe-core, the accessibility checker the browser
# tests inject (tests/e2e/axe), Debian's chromium for the browser test and Debian's kubectl, which renders deploy/
# for tests/deploy (its built-in kustomize).
# Idempotent and quiet: each step runs only when its result is missing or out of date.
test-peers: tests/oidc/node_modules/.installed tests/e2e/axe/node_modules/.installed chromium kubectl

tests/oidc/node_modules/.installed: tests/oidc/package.json tests/oidc/package-lock.json
	@command -v npm >/dev/null || { echo "error: Node.js 20+ with npm is needed for the OIDC test provider" >&2; exit 1; }
	cd tests/oidc && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

tests/e2e/axe/node_modules/.installed: tests/e2e/axe/package.json tests/e2e/axe/package-lock.json
	@command -v npm >/dev/null || { echo "error: Node.js 20+ with npm is needed for axe-core (browser tests)" >&2; exit 1; }
	cd tests/e2e/axe && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

CHROMIUM ?= /usr/bin/chromium
chromium:
	@test -x $(CHROMIUM) || { \
	  echo "installing Debian's chromium for the browser tests (apt-get)"; \
	  SUDO=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	  test -x $(CHROMIUM) || { echo "error: $(CHROMIUM) is still missing" >&2; exit 1; }; }

KUBECTL ?= /usr/bin/kubectl
kubectl:
	@test -x $(KUBECTL) || { \
	  echo "installing Debian's kubectl for the deployment tests (apt-get)"; \
	  SUDO=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq kubectl >/dev/null; \
	  test -x $(KUBECTL) || { echo "error: $(KUBECTL) is still missing" >&2; exit 1; }; }

services:
	@scripts/ensure-services.sh

# Tests and benchmarks load the development settings (DEBUG=true: a key from var/secret_key, no HTTPS
# redirect); pytest-django still runs each test with DEBUG off. tests/security checks the production ones.
# The suite runs in TEST_WORKERS processes (pytest-xdist), a file at a time each: most of a test's time is spent
# waiting on a subprocess, a browser or a simulated cluster, so three workers on two cores keep both busy: 16 min
# on a quiet machine against 34 with two (2026-12-03; the soak, axe and the fuzz then overlap the rest); 24 min on
# 2026-12-04's machine, about 1.7x slower (docs/scale.md), close to the 25-minute bound. Each
# worker has its own test database (pytest-django) and Redis database (tests/conftest.py). TEST_WORKERS=0 runs
# it in one process.
TEST_WORKERS ?= 3
XDIST = $(if $(filter 0,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadfile)
test: install services
	DEBUG=true DATABASE_URL=$(TEST_DATABASE_URL) TEST_BROKER_URL=$(TEST_BROKER_URL) $(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# The whole suite on a busy machine (docs/testing.md): two CPU-burning processes run beside `make test` and
# are stopped when it ends, whatever its result (and after BURN_SECONDS at the latest).
BURN_SECONDS ?= 5400
test-loaded: install services
	@burners=""; for n in 1 2; do timeout $(BURN_SECONDS) $(PY) -c 'while True: pass' & burners="$$burners $$!"; done; \
	  trap 'kill $$burners 2>/dev/null' EXIT; \
	  echo "two CPU burners running (pids$$burners)"; \
	  DEBUG=true DATABASE_URL=$(TEST_DATABASE_URL) TEST_BROKER_URL=$(TEST_BROKER_URL) $(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# The API fuzz at length (docs/testing.md): schemathesis, 200 cases per operation instead of `make test`'s 25.
FUZZ_CASES_PER_OPERATION ?= 200
fuzz: install services
	DEBUG=true DATABASE_URL=$(TEST_DATABASE_URL) TEST_DATABASE_NAME=test_fuzz TEST_BROKER_URL=$(TEST_BROKER_URL) \
	  FUZZ_CASES_PER_OPERATION=$(FUZZ_CASES_PER_OPERATION) $(PY) -m pytest -s tests/security/test_api_fuzz.py $(PYTEST_ARGS)

# The scale-out proof alone (docs/operations.md): gunicorn, Celery workers, beat and the watchers as processes,
# 500 workflows while a worker is killed. Its own test database and Redis database, so it can run beside
# `make test`; -s shows its figures.
SCALE_BROKER_URL ?= redis://127.0.0.1:6379/7
SCALE_WORKFLOWS ?= 500
scale-test: install services
	DEBUG=true DATABASE_URL=$(TEST_DATABASE_URL) TEST_DATABASE_NAME=test_scale_proof \
	  TEST_BROKER_URL=$(SCALE_BROKER_URL) SCALE_WORKFLOWS=$(SCALE_WORKFLOWS) $(PY) -m pytest -s -m scale tests/scale $(PYTEST_ARGS)

# The soak under faults (docs/operations.md, "Soak"): the production shape as processes under a steady mixed load
# for MINUTES, a Celery worker SIGKILLed, the database's connections terminated, Redis restarted, a cluster's API
# down 60 s and a watcher replica killed, on a schedule; then its checks (non-zero exit when one fails). Its own
# database (SOAK_DATABASE, recreated and dropped) and its own Redis server on a free port: loopback only, and
# nobody else's services touched. `make test` runs 3 minutes of it (tests/soak).
MINUTES ?= 30
SOAK_DATABASE ?= pool_portal_soak
soak: install services
	DEBUG=true $(PY) -m soak --minutes $(MINUTES) --server $(TEST_DATABASE_URL) --database $(SOAK_DATABASE) $(SOAK_ARGS)

# `make dev`'s promise at length (tests/e2e/test_make_dev.py): 5 submissions in a row through the API, 5 through
# the browser and 5 with the simulated cluster killed mid-run; `make test` runs 2 of each.
MAKE_DEV_RUNS ?= 5
dev-proof: install
	DEBUG=true DATABASE_URL=$(TEST_DATABASE_URL) TEST_DATABASE_NAME=test_dev_proof TEST_BROKER_URL=$(SCALE_BROKER_URL) \
	  MAKE_DEV_RUNS=$(MAKE_DEV_RUNS) $(PY) -m pytest -s tests/e2e/test_make_dev.py $(PYTEST_ARGS)

bench: install
	DEBUG=true DATABASE_URL=$(TEST_DATABASE_URL) FLEET_DATABASE=$(FLEET_DATABASE) $(PY) bench/run.py $(BENCH)

# A year of a 10,000-GPU fleet in a PostgreSQL database of its own (docs/scale.md), rebuilt from scratch: 20
# backends of 2,500 nodes, 100 pools, 500 projects, 1,000,000 workflows with 3,000,000 tasks and their events and
# usage record. FLEET_SCALE=0.1 builds a tenth of every count. `make bench BENCH=fleet_reads` reads it.
FLEET_SCALE ?= 1
FLEET_DATABASE ?= pool_portal_fleet
FLEET_SERVER ?= postgres://postgres@127.0.0.1:5432
fleet: install services
	DEBUG=true $(PY) -m bench.fleet --scale $(FLEET_SCALE) --database $(FLEET_DATABASE) --server $(FLEET_SERVER)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) var
