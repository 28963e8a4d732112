"""Fixtures for fault-injection tests: a private PostgreSQL cluster and a private Redis."""

from __future__ import annotations

import pytest

from .private_services import PostgresCluster, RedisServer


@pytest.fixture
def private_postgres():
    """A PostgreSQL cluster of this test's own, on a free port; the test may stop and start it."""
    cluster = PostgresCluster()
    try:
        cluster.init().start()
        yield cluster
    finally:
        if cluster.data.exists() and cluster.running():
            cluster.stop()
        cluster.remove()


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of this test's own, on a free port; the test may kill and restart it."""
    server = RedisServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()
