"""Fit the open-stream limits to the process's file-descriptor limit.

Every open notification stream holds a socket. With MAX_STREAMS at 10,000 and a soft
RLIMIT_NOFILE of 1,024 (a common default), the process would run out of descriptors long before
the limit answers 429: accept() fails, and so do database connections and file reads, for every
client. At start the soft limit is raised as far as needed (never past the hard limit); if it
stays too low, the stream limits are lowered to fit, keeping RESERVED_DESCRIPTORS for everything
else. Either outcome is logged once.
"""

from __future__ import annotations

import logging

from ..settings import mcp_settings

logger = logging.getLogger(__name__)
# Database connections, the listening socket, log and static files, non-stream requests.
RESERVED_DESCRIPTORS = 256

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX: no such limit to fit
    resource = None  # type: ignore[assignment]


def fit_stream_limits() -> tuple[int, int] | None:
    """Raise RLIMIT_NOFILE towards what MAX_STREAMS needs; lower the stream limits if it stays
    short. Returns the (soft, hard) limit now in force, or None where there is no such limit."""
    mcp_settings.clamp("MAX_STREAMS", None)
    mcp_settings.clamp("MAX_STREAMS_PER_CLIENT", None)
    if resource is None:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = int(mcp_settings.MAX_STREAMS) + RESERVED_DESCRIPTORS
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            logger.info("Raised the open-file limit from %d to %d for up to %d streams",
                        soft, target, mcp_settings.MAX_STREAMS)
            soft = target
        except (OSError, ValueError) as exc:
            logger.warning("Could not raise the open-file limit from %d: %s", soft, exc)
    if soft != resource.RLIM_INFINITY and soft < needed:
        streams = max(soft - RESERVED_DESCRIPTORS, 1)
        mcp_settings.clamp("MAX_STREAMS", streams)
        mcp_settings.clamp("MAX_STREAMS_PER_CLIENT", streams)
        logger.warning("The open-file limit is %d (hard limit %s): at most %d notification streams per "
                       "process and per client, not %s; raise `ulimit -n` to serve more",
                       soft, "unlimited" if hard == resource.RLIM_INFINITY else hard, streams,
                       mcp_settings.user_settings.get("MAX_STREAMS", "the configured number"))
    return soft, hard
