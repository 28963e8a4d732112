"""Opaque, tamper-checked list cursors. Pure Python; the caller supplies the secret.

A cursor names the list kind, the offset of the next page, and the key (name or URI) of the
last item served, signed with HMAC-SHA256. The next page starts right after that key in the
current list's deterministic order, so a cursor keeps working across catalog changes;
the offset is only a fallback for orders that are not sorted by key.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import hmac
import json
from typing import Any

from .errors import InvalidParams

_SIG_BYTES = 16


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_cursor(secret: bytes, kind: str, offset: int, last: str) -> str:
    payload = json.dumps([kind, offset, last], separators=(",", ":"), ensure_ascii=False).encode()
    sig = hmac.new(secret, payload, hashlib.sha256).digest()[:_SIG_BYTES]
    return _b64(payload) + "." + _b64(sig)


def decode_cursor(secret: bytes, kind: str, cursor: Any) -> tuple[int, str]:
    """Return (offset, last_key) or raise :class:`InvalidParams` (-32602) for anything forged,
    malformed or minted for another list."""
    bad = InvalidParams("Invalid cursor", data={"cursor": cursor if isinstance(cursor, str) else None})
    if not isinstance(cursor, str) or "." not in cursor or len(cursor) > 4096:
        raise bad
    body, _, sig = cursor.partition(".")
    try:
        payload = _unb64(body)
        given = _unb64(sig)
    except (ValueError, TypeError):
        raise bad from None
    want = hmac.new(secret, payload, hashlib.sha256).digest()[:_SIG_BYTES]
    if not hmac.compare_digest(given, want):
        raise bad
    try:
        c_kind, offset, last = json.loads(payload)
    except (ValueError, TypeError):
        raise bad from None
    if c_kind != kind or not isinstance(offset, int) or offset < 0 or not isinstance(last, str):
        raise bad
    return offset, last


def paginate(items: list[dict[str, Any]], *, kind: str, key: str, cursor: Any, page_size: int,
             secret: bytes, sorted_by_key: bool, partial: bool = False) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ``items`` and the cursor of the next page (None on the last page).

    ``partial``: ``items`` is not the whole list but what follows the cursor's key (at least one
    more than a page of it, read straight from the database), so the next cursor's offset
    counts on from the cursor's own: the same cursor the whole list would give while it is
    unchanged."""
    offset = 0
    if cursor is None:
        start = 0
    else:
        offset, last = decode_cursor(secret, kind, cursor)
        if sorted_by_key:
            start = bisect.bisect_right(items, last, key=lambda it: it.get(key, ""))
        else:
            start = next((i + 1 for i, it in enumerate(items) if it.get(key) == last), min(offset, len(items)))
    if page_size <= 0:
        return items[start:], None
    page = items[start:start + page_size]
    end = start + len(page)
    if end >= len(items) or not page:
        return page, None
    position = offset + len(page) if partial else end
    return page, encode_cursor(secret, kind, position, str(page[-1].get(key, "")))


def cursor_key(secret: bytes, kind: str, cursor: Any) -> str | None:
    """The last key a cursor names (None for the first page); raises like :func:`paginate`."""
    return None if cursor is None else decode_cursor(secret, kind, cursor)[1]
