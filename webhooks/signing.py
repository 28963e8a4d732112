"""HMAC-SHA256 signatures of webhook bodies; stdlib only, so receivers can copy this file.

The signed message is ``f"{timestamp}.{body}"`` (timestamp: Unix seconds as sent in
``X-Registry-Timestamp``; body: the raw request bytes), and the header is
``X-Registry-Signature: sha256=<hex digest>``.
"""

from __future__ import annotations

import hashlib
import hmac
import time

PREFIX = "sha256="
DEFAULT_TOLERANCE_S = 300


def _as_bytes(value: str | bytes) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else value


def sign(secret: str | bytes, timestamp: str | int, body: str | bytes) -> str:
    """The X-Registry-Signature header value for `body` sent at `timestamp`."""
    message = _as_bytes(str(timestamp)) + b"." + _as_bytes(body)
    return PREFIX + hmac.new(_as_bytes(secret), message, hashlib.sha256).hexdigest()


def verify(
    secret: str | bytes,
    timestamp: str | int,
    body: str | bytes,
    signature: str,
    *,
    tolerance: int | None = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> bool:
    """True if `signature` is the registry's signature of `body` at `timestamp`.

    With `tolerance` (seconds, default 300) a timestamp further than that from now is refused,
    so a captured request cannot be replayed later; pass None to skip that check.
    """
    try:
        sent_at = int(str(timestamp))
    except (TypeError, ValueError):
        return False
    if tolerance is not None and abs((time.time() if now is None else now) - sent_at) > tolerance:
        return False
    if not isinstance(signature, str) or not signature.startswith(PREFIX):
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature)
