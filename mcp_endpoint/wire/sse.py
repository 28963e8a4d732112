"""Server-Sent Events framing. Pure Python: a wire format, so the hub can build whole events
(mcp_endpoint/notify/frames.py) and the transport write them."""

from __future__ import annotations

KEEPALIVE = b": keep-alive\n\n"


def event(data: bytes, *, event_name: str | None = "message", event_id: str | None = None) -> bytes:
    """One SSE event carrying ``data`` (a JSON message: no raw newlines in compact JSON,
    but split defensively so multi-line payloads stay valid)."""
    if event_id is None and event_name == "message" and b"\n" not in data and b"\r" not in data:
        return b"event: message\ndata: " + data + b"\n\n"  # every notification: one concatenation
    parts: list[bytes] = []
    if event_id is not None:
        parts.append(b"id: " + event_id.encode("utf-8") + b"\n")
    if event_name:
        parts.append(b"event: " + event_name.encode("utf-8") + b"\n")
    if b"\n" in data or b"\r" in data:
        for line in data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"):
            parts.append(b"data: " + line + b"\n")
    else:
        parts.append(b"data: " + data + b"\n")
    parts.append(b"\n")
    return b"".join(parts)


def comment(text: str = "") -> bytes:
    return b": " + text.encode("utf-8") + b"\n\n"


def retry(ms: int) -> bytes:
    return b"retry: " + str(int(ms)).encode() + b"\n\n"
