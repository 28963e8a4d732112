"""Shared fixtures: role users and a clean in-memory catalog per test."""

from __future__ import annotations

import pytest

from registry import changes, fetches
from tests.factories import grant, make_user


@pytest.fixture(autouse=True)
def fresh_catalog():
    """Each test starts from a new catalog generation, so no cached catalog leaks between tests."""
    changes.bump_generation()
    fetches.AUTO_FLUSH = False
    yield
    changes.bump_generation()


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
