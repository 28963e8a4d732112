"""Shared fixtures: role users and a clean in-memory catalog per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry import changes
from registry.serving import fetches, warmup
from registry.storage import cache as content_cache
from tests.factories import grant, make_user


@pytest.fixture(scope="session")
def django_db_modify_db_settings(request, django_db_modify_db_settings_parallel_suffix):
    """`--reuse-db` keeps the migrated test database from one run to the next (`make test-fast`).
    An in-memory SQLite database ends with its run, so then the test database is a file beside
    the project (ignored by git; `--create-db` builds it anew)."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if (request.config.getoption("reuse_db") and database["ENGINE"] == "django.db.backends.sqlite3"
            and not database.setdefault("TEST", {}).get("NAME")):
        database["TEST"]["NAME"] = str(Path(settings.BASE_DIR) / "test-db.sqlite3")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item):
    """A catalog still warming up in the background (registry/serving/warmup.py) finishes before the
    test's fixtures, its database among them, are torn down."""
    warmup.join()


@pytest.fixture(autouse=True)
def fresh_catalog():
    """Each test starts from a new catalog generation, so no cached catalog leaks between tests, and
    with no fetch counted by an earlier test still waiting for its flush (the counters are per process)."""
    changes.bump_generation()
    fetches.AUTO_FLUSH = False
    with fetches._lock:
        fetches._pending.clear()
        fetches._last_seen.clear()
    yield
    changes.bump_generation()


@pytest.fixture(autouse=True)
def fresh_throttles():
    """Per-address counters of the OAuth endpoints (oauth/throttle.py) start at zero in each test:
    every test client calls from 127.0.0.1."""
    from django.core.cache import caches

    caches["throttle"].clear()
    yield


@pytest.fixture(autouse=True)
def content_store(tmp_path, settings):
    """Each test stores documents under its own MEDIA_ROOT and starts with an empty content cache."""
    location = tmp_path / "media"
    settings.MEDIA_ROOT = location
    settings.STORAGES = {**settings.STORAGES, "registry": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": location}}}
    content_cache.cache.clear()
    yield location
    content_cache.cache.clear()


@pytest.fixture
def editor(db):
    return make_user("Editors")


@pytest.fixture
def publisher(db):
    return make_user("Publishers")


@pytest.fixture
def auditor(db):
    return make_user("Auditors")


@pytest.fixture
def superuser(db):
    return make_user(None)


@pytest.fixture
def second_publisher(db):
    return make_user("Publishers")


@pytest.fixture
def release_manager(db):
    """A publisher who also holds the emergency override of protected labels."""
    return grant(make_user("Publishers"), "registry.override_protected_labels")


@pytest.fixture(autouse=True)
def default_language():
    """Each test starts in the default language: Django's LocaleMiddleware leaves the last request's
    language active in the thread, and a test that asked for German must not make the next one German."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()
