# The two commands a newcomer needs: `make run` and `make test`. Both install first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test test-fast conformance bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

# A development server: debug mode (and so the public development key unless DJANGO_SECRET_KEY is set).
run: export DJANGO_DEBUG ?= 1
run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo_setup --host $(HOST) --port $(PORT)
	MCP_ALLOW_ANONYMOUS=$${MCP_ALLOW_ANONYMOUS:-1} \
		$(PY) -m daphne -b $(HOST) -p $(PORT) config.asgi:application

test: install
	$(PY) -m pytest -q
	@# Where PostgreSQL is at hand (CI), the write-path tests run on it too: row locks, races.
	@if [ -n "$$TEST_POSTGRES_URL" ]; then \
		echo "== write-path tests on PostgreSQL"; \
		DATABASE_URL="$$TEST_POSTGRES_URL" $(PY) -m pytest -q -p no:cacheprovider \
			tests/registry/test_reviews.py tests/registry/test_services.py tests/registry/test_models.py \
			tests/api/test_concurrent_edits.py tests/mcp_endpoint/test_change_log_gaps.py \
			tests/registry/test_consistency.py tests/webhooks/test_delivery.py tests/registry/test_bulk_import.py tests/registry/test_catalog_pages.py; \
	fi
	bash bin/conformance

test-fast: install
	$(PY) -m pytest -m "not browser and not e2e and not services"

conformance: install
	bash bin/conformance

bench: install
	bash bench/run.sh

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-wal db.sqlite3-shm
