"""Which failures are outages of a dependency (answer "retry shortly"), in one place.

The MCP endpoint answers an outage with HTTP 503 and JSON-RPC -32603, the REST API with 503 and
a `code`; both ask this module, so a database or storage failure means the same on every path.
Anything else that fails is a fault of this server (500) or of the request (4xx), decided by
the caller.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from registry.errors import StorageUnavailable

DATABASE_UNAVAILABLE = "database_unavailable"
_DISK_ERRORS = {errno.ENOSPC: "full", errno.EDQUOT: "full", errno.EROFS: "read_only"}


@dataclass(frozen=True)
class Outage:
    code: str     # database_unavailable, storage_full, storage_read_only, storage_unavailable
    message: str  # for the caller: what is down, and that a retry will do
    dependency: str  # "database" or "storage"


def outage_of(exc: BaseException | None) -> Outage | None:
    """The outage `exc` reports, or None when it is no outage.

    Database errors count unless they say the statement itself was wrong (IntegrityError,
    DataError, ProgrammingError, NotSupportedError): a lost or refused connection, a locked
    SQLite file, an aborted transaction. Storage errors are what the content store raises
    (registry.storage.blobs: full, read-only, unreachable), and a full or read-only disk met
anywhere else (the temporary files of an upload)."""
    from django.db import DatabaseError, DataError, IntegrityError, NotSupportedError, ProgrammingError

    if isinstance(exc, StorageUnavailable):
        what = {"full": "is full", "read_only": "is read-only"}.get(exc.reason, "is unreachable")
        return Outage(f"storage_{exc.reason}", f"Service Unavailable: the content store {what}; retry shortly.",
                      "storage")
    if isinstance(exc, OSError) and exc.errno in _DISK_ERRORS:  # the server's own disk (an upload's temp files)
        reason = _DISK_ERRORS[exc.errno]
        return Outage(f"storage_{reason}", f"Service Unavailable: the server's disk is {reason.replace('_', '-')}; "
                      "retry shortly.", "storage")
    if isinstance(exc, DatabaseError) and not isinstance(
            exc, (IntegrityError, DataError, ProgrammingError, NotSupportedError)):
        return Outage(DATABASE_UNAVAILABLE, "Service Unavailable: the registry database is unreachable; "
                      "retry shortly.", "database")
    return None
