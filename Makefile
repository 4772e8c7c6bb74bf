# Pool Portal: the two commands that matter are `make dev` and `make test` (see README.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
PORT ?= 8000
export UV_PROJECT_ENVIRONMENT := $(VENV)
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres
TEST_BROKER_URL ?= redis://127.0.0.1:6379/15

.PHONY: install dev test bench lint services clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml uv.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@test -x $(UV) || $(PY) -m pip install --quiet --disable-pip-version-check uv==0.13.8
	$(UV) sync --frozen --inexact --quiet
	@touch $@

dev: install
	@mkdir -p var
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py seed_demo
	DEBUG=$${DEBUG:-true} $(PY) manage.py runserver 127.0.0.1:$(PORT)

services:
	@scripts/ensure-services.sh

test: install services
	DATABASE_URL=$(TEST_DATABASE_URL) TEST_BROKER_URL=$(TEST_BROKER_URL) $(PY) -m pytest $(PYTEST_ARGS)

bench: install
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) bench/run.py $(BENCH)

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) var
