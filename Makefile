# The two commands a newcomer needs: `make run` and `make test`. Both install first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install lock run test test-fast lint conformance bench clean

install: $(VENV)/.installed

# Every dependency, runtime and dev, comes pinned and hashed from requirements.lock; the project
# itself is then installed without its dependencies, so the ranges in pyproject.toml (kept for
# those who install the package) never pull a newer release into a checkout.
$(VENV)/.installed: requirements.lock pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --require-hashes -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

# Re-resolve requirements.lock from pyproject.toml's ranges (newest releases that satisfy them),
# for every platform; `make install` then installs the new pins.
lock: install
	$(PY) -m uv pip compile pyproject.toml --extra dev --universal --python-version 3.11 \
		--generate-hashes --quiet --custom-compile-command "make lock" -o requirements.lock

# A development server: debug mode (and so the public development key unless DJANGO_SECRET_KEY is set),
# e-mail printed to the console with links to this server, and the worker (scheduled releases, e-mail,
# webhooks) running beside it until the server stops.
run: export DJANGO_DEBUG ?= 1
run: export REGISTRY_PUBLIC_URL ?= http://$(HOST):$(PORT)
run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo_setup --host $(HOST) --port $(PORT)
	$(PY) manage.py registry_worker --verbosity 0 & worker=$$!; trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
		MCP_ALLOW_ANONYMOUS=$${MCP_ALLOW_ANONYMOUS:-1} \
		$(PY) -m daphne -b $(HOST) -p $(PORT) config.asgi:application

# The linter and the type checker first (`make lint`): a finding fails the build before any test runs.
test: lint
	$(PY) -m pytest -q
	@# Where PostgreSQL is at hand (CI), the write-path tests run on it too: row locks, races.
	@if [ -n "$$TEST_POSTGRES_URL" ]; then \
		echo "== write-path tests on PostgreSQL"; \
		DATABASE_URL="$$TEST_POSTGRES_URL" $(PY) -m pytest -q -p no:cacheprovider \
			tests/registry/test_reviews.py tests/registry/test_services.py tests/registry/test_models.py tests/registry/test_schedules.py \
			tests/api/test_concurrent_edits.py tests/mcp_endpoint/test_change_log_gaps.py \
			tests/registry/test_consistency.py tests/webhooks/test_delivery.py tests/registry/test_bulk_import.py tests/registry/test_catalog_pages.py tests/registry/test_fetches.py tests/registry/test_id_lists.py tests/registry/test_page_runs.py tests/registry/test_cold_read_shortcuts.py; \
	fi
	bash bin/conformance

# The quick loop: no browser, end-to-end or service tests, and the migrated test database kept
# between runs (test-db.sqlite3; `--create-db` rebuilds it after a change to the migrations' data).
test-fast: install
	$(PY) -m pytest -m "not browser and not e2e and not services" --reuse-db

# The linter and the type checker (configured in pyproject.toml); `make test` runs them first.
lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy

conformance: install
	bash bin/conformance

bench: install
	bash bench/run.sh

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-wal db.sqlite3-shm
