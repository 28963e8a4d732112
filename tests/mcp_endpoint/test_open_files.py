"""The stream limits fit the file-descriptor limit: raised when possible, else lowered, and logged."""

from __future__ import annotations

import logging
import resource

import pytest

from mcp_endpoint.settings import mcp_settings
from mcp_endpoint.transport import open_files
from mcp_endpoint.transport.open_files import RESERVED_DESCRIPTORS, fit_stream_limits


class FakeLimits:
    def __init__(self, soft: int, hard: int, *, refuse: bool = False) -> None:
        self.soft, self.hard, self.refuse, self.calls = soft, hard, refuse, []

    def getrlimit(self, which: int) -> tuple[int, int]:
        assert which == resource.RLIMIT_NOFILE
        return self.soft, self.hard

    def setrlimit(self, which: int, limits: tuple[int, int]) -> None:
        self.calls.append(limits)
        if self.refuse:
            raise ValueError("not allowed")
        self.soft, self.hard = limits


@pytest.fixture
def limits(monkeypatch):
    def install(soft: int, hard: int, **kw) -> FakeLimits:
        fake = FakeLimits(soft, hard, **kw)
        monkeypatch.setattr(open_files.resource, "getrlimit", fake.getrlimit)
        monkeypatch.setattr(open_files.resource, "setrlimit", fake.setrlimit)
        return fake
    yield install
    monkeypatch.undo()
    fit_stream_limits()  # this process's real limits again


def test_a_low_soft_limit_is_raised_as_far_as_the_streams_need(limits, settings, caplog):
    settings.MCP_ENDPOINT = {"MAX_STREAMS": 10_000, "MAX_STREAMS_PER_CLIENT": 2_000}
    fake = limits(1024, 1_048_576)
    with caplog.at_level(logging.INFO, logger="mcp_endpoint.transport.open_files"):
        assert fit_stream_limits() == (10_000 + RESERVED_DESCRIPTORS, 1_048_576)
    assert fake.calls == [(10_000 + RESERVED_DESCRIPTORS, 1_048_576)]
    assert mcp_settings.MAX_STREAMS == 10_000 and mcp_settings.MAX_STREAMS_PER_CLIENT == 2_000
    assert "Raised the open-file limit from 1024" in caplog.text


def test_a_hard_limit_too_low_lowers_both_stream_limits_and_says_so(limits, settings, caplog):
    settings.MCP_ENDPOINT = {"MAX_STREAMS": 10_000, "MAX_STREAMS_PER_CLIENT": 2_000}
    fake = limits(1024, 1024)
    with caplog.at_level(logging.WARNING, logger="mcp_endpoint.transport.open_files"):
        fit_stream_limits()
    assert fake.calls == []  # already at the hard limit
    assert mcp_settings.MAX_STREAMS == mcp_settings.MAX_STREAMS_PER_CLIENT == 1024 - RESERVED_DESCRIPTORS
    assert "at most 768 notification streams" in caplog.text


def test_raising_partway_lowers_the_streams_to_what_the_hard_limit_allows(limits, settings):
    settings.MCP_ENDPOINT = {"MAX_STREAMS": 10_000, "MAX_STREAMS_PER_CLIENT": 2_000}
    fake = limits(1024, 4096)
    fit_stream_limits()
    assert fake.calls == [(4096, 4096)]
    assert mcp_settings.MAX_STREAMS == 4096 - RESERVED_DESCRIPTORS
    assert mcp_settings.MAX_STREAMS_PER_CLIENT == 2_000  # already below the new process limit


def test_a_refused_raise_is_logged_and_the_streams_fit_the_old_limit(limits, settings, caplog):
    settings.MCP_ENDPOINT = {"MAX_STREAMS": 10_000, "MAX_STREAMS_PER_CLIENT": 100}
    limits(1024, 65536, refuse=True)
    with caplog.at_level(logging.WARNING, logger="mcp_endpoint.transport.open_files"):
        fit_stream_limits()
    assert "Could not raise the open-file limit from 1024" in caplog.text
    assert mcp_settings.MAX_STREAMS == 768 and mcp_settings.MAX_STREAMS_PER_CLIENT == 100


def test_this_process_can_open_as_many_streams_as_its_limit_allows():
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft >= mcp_settings.MAX_STREAMS + RESERVED_DESCRIPTORS
