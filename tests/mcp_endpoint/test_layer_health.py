"""A channel-layer outage is logged once with its cause, summarised while it lasts, and
ended with one line: not a traceback every second."""

from __future__ import annotations

import logging

from mcp_endpoint.notify.layer_health import SUMMARY_SECONDS, LayerHealth


def receive_error() -> logging.LogRecord:
    try:
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379")
    except ConnectionError:
        import sys

        return logging.LogRecord("channels_redis.pubsub", logging.ERROR, __file__, 1,
                                 "Unexpected exception in receive task", None, sys.exc_info())


def test_channels_redis_tracebacks_pass_once_per_outage_and_are_counted_after(caplog):
    health = LayerHealth()
    with caplog.at_level(logging.WARNING, logger="mcp_endpoint.notify.hub"):
        passed = [health.filter(receive_error()) for _ in range(30)]  # 30 s of a once-a-second error
    assert passed == [True] + [False] * 29
    assert health.suppressed == 29 and health.down
    assert [r.getMessage() for r in caplog.records] == ["channel layer unavailable; change-log catch-up active"]


def test_an_outage_is_summarised_periodically_and_its_end_logged_once(caplog):
    health = LayerHealth()
    with caplog.at_level(logging.WARNING, logger="mcp_endpoint.notify.hub"):
        for second in range(int(2 * SUMMARY_SECONDS) + 1):
            health.probe_failed(now=1000.0 + second)
        health.probe_ok(now=1000.0 + 2 * SUMMARY_SECONDS + 1)
        health.probe_ok(now=1000.0 + 2 * SUMMARY_SECONDS + 2)
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "channel layer unavailable; change-log catch-up active"
    assert messages[1].startswith(f"channel layer still unavailable for {int(SUMMARY_SECONDS)} s")
    assert messages[2].startswith(f"channel layer still unavailable for {int(2 * SUMMARY_SECONDS)} s")
    assert messages[3:] == [f"channel layer is back after {int(2 * SUMMARY_SECONDS) + 1} s"]
    assert not health.down


def test_other_layer_failures_during_an_outage_are_logged_at_debug_only(caplog):
    health = LayerHealth()
    log = logging.getLogger("mcp_endpoint.transport.stream_loop")
    with caplog.at_level(logging.DEBUG, logger="mcp_endpoint.transport.stream_loop"):
        for _ in range(5):
            try:
                raise ConnectionError("down")
            except ConnectionError:
                health.failure(log, "channel layer unavailable for this stream")
    levels = [r.levelno for r in caplog.records]
    assert levels == [logging.WARNING] + [logging.DEBUG] * 4
    assert caplog.records[0].exc_info is not None
