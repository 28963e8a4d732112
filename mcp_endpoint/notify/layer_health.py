"""Whether the channel layer (Redis) is reachable, and logging an outage once, not every second.

While Redis is down, channels_redis' pub/sub receive task logs a traceback every second, and
every stream or publish that touches the layer would add its own. Delivery does not depend on
the layer (the change-log catch-up carries every change), so an outage deserves one warning
with the cause, a periodic summary, and one line when the layer is back. The hub's monitor
task probes the layer and drives :meth:`LayerHealth.probe_failed` / :meth:`probe_ok`; every
other place that hits a layer error reports it through :meth:`LayerHealth.failure`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger("mcp_endpoint.notify.hub")

SUMMARY_SECONDS = 30.0  # how often an ongoing outage is summarised


class LayerHealth:
    def __init__(self) -> None:
        self.down_since: float | None = None
        self.last_summary = 0.0
        self.suppressed = 0

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failure(self, logger: logging.Logger, message: str, *args: Any) -> None:
        """A layer operation failed: the first failure of an outage is logged with its traceback,
        later ones at debug level only (counted in the summary)."""
        if self.down_since is None:
            self._went_down()
            logger.warning(message + "; change-log catch-up active", *args, exc_info=True)
        else:
            self.suppressed += 1
            logger.debug(message, *args, exc_info=True)

    def probe_failed(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self.down_since is None:
            self._went_down(now)
            log.warning("channel layer unavailable; change-log catch-up active", exc_info=True)
        elif now - self.last_summary >= SUMMARY_SECONDS:
            self.last_summary = now
            log.warning("channel layer still unavailable for %d s; change-log catch-up active "
                        "(%d repeated errors not logged)", now - self.down_since, self.suppressed)

    def probe_ok(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self.down_since is not None:
            log.warning("channel layer is back after %d s", now - self.down_since)
        self.down_since = None
        self.suppressed = 0

    def _went_down(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self.down_since = now
        self.last_summary = now
        self.suppressed = 0

    def filter(self, record: logging.LogRecord) -> bool:
        """logging.Filter for channels_redis: pass its first receive error of an outage, then
        only count them (the summary reports how many)."""
        if record.exc_info is None:
            return True
        if self.down_since is None:
            self._went_down()
            log.warning("channel layer unavailable; change-log catch-up active")
            return True
        self.suppressed += 1
        return False


health = LayerHealth()


def install_filter() -> None:
    """Collapse channels_redis' once-a-second receive tracebacks into the outage summary."""
    target = logging.getLogger("channels_redis.pubsub")
    if not any(f is health for f in target.filters):
        target.addFilter(health)
