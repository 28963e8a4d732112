"""Notification frames built once per distinct notification and shared by every stream that hears it.

A fan-out to thousands of streams used to serialize the JSON-RPC notification and wrap it in an
SSE event once per listener (12-15% of a fan-out's time in the profile, issue 24), although
listeners that hear the same notification mostly receive the very same bytes. Now each listener
has a :class:`Shape`, what its transport writes (a whole SSE event or a bare JSON line, with the
change-log position as SSE id or not, with a listen's subscription id or not), and a fan-out
builds each (notification, shape) once (:class:`FrameCache`):

* a shape without a per-stream part gives one ``bytes`` object that every such listener is
  handed (2025-11-25 GET streams: their SSE id is the hub's position, the same for all);
* a 2026-07-28 listen tags every notification with its own subscription id (the listen request's
  id, ``params._meta``). The frame is built once with a placeholder there and split around it:
  each listener's frame is then ``prefix + tag + suffix``, its tag encoded when it listened.

The bytes are exactly what the per-listener build produced (tests/mcp_endpoint/test_frames.py).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from ..wire import jsonrpc, sse
from ..wire.versions import META_SUBSCRIPTION_ID

# Stands in for a listener's subscription id while a tagged frame is built; split out after.
_PLACEHOLDER = "\ue000mcp-subscription-id\ue001"
_PLACEHOLDER_JSON = jsonrpc.dumps(_PLACEHOLDER)

# A built frame: whole bytes shared as they are, or (prefix, suffix) around a listener's tag.
Frame = bytes | tuple[bytes, bytes] | tuple[bytes, str]


@dataclass(frozen=True, slots=True)
class Shape:
    """How a listener's transport wants its notifications; listeners of equal shape share frames.

    ``sse``: a complete SSE event (HTTP streams write it as it is) rather than the bare JSON
    message (stdio, which writes one line per message); ``event_ids``: the event carries the
    change-log position as its SSE id (2025-11-25 GET resumption); ``tagged``: the params carry
    ``_meta`` with the listener's subscription id (2026-07-28 ``subscriptions/listen``)."""

    sse: bool = False
    event_ids: bool = False
    tagged: bool = False

    def build(self, method: str, params: dict[str, Any] | None, position: int) -> Frame:
        """The frame of one notification at `position` for every listener of this shape."""
        if self.tagged:
            params = {**(params or {}), "_meta": {META_SUBSCRIPTION_ID: _PLACEHOLDER}}
        data = jsonrpc.encode_notification(method, params)
        if self.sse:
            whole = sse.event(data, event_id=str(position) if self.event_ids else None)
        elif self.event_ids:
            return (data, str(position))  # the transport frames it with its id
        else:
            whole = data
        if not self.tagged:
            return whole
        prefix, found, suffix = whole.partition(_PLACEHOLDER_JSON)
        if not found or _PLACEHOLDER_JSON in suffix:  # pragma: no cover - params never hold the placeholder
            raise ValueError("cannot place a subscription id in this notification")
        return (prefix, suffix)


def subscription_tag(request_id: Any) -> bytes:
    """A listen's subscription id as it appears inside its notifications (its JSON encoding)."""
    return jsonrpc.dumps(request_id)


def finish(frame: Frame, tag: bytes | None) -> Any:
    """One listener's queue item from a shared frame: the frame itself, or spliced around `tag`."""
    if tag is None:
        return frame
    prefix, suffix = frame
    return prefix + tag + suffix  # type: ignore[operator]


def note_key(method: str, params: dict[str, Any] | None) -> Hashable:
    """Equal for equal notifications (params are small flat dicts: ``{"uri": ...}`` or None)."""
    return (method, tuple(sorted(params.items())) if params else None)


class FrameCache:
    """The frames of one fan-out (one change-log position), built on first use and then shared."""

    __slots__ = ("built", "by_notes", "position")

    def __init__(self, position: int) -> None:
        self.position = position
        self.built: dict[tuple[Hashable, Shape], Frame] = {}
        self.by_notes: dict[tuple[int, Shape], list[Frame]] = {}

    def frame(self, method: str, params: dict[str, Any] | None, shape: Shape) -> Frame:
        key = (note_key(method, params), shape)
        frame = self.built.get(key)
        if frame is None:
            frame = self.built[key] = shape.build(method, params, self.position)
        return frame

    def frames(self, notes: Sequence[tuple[str, dict[str, Any] | None]], shape: Shape) -> list[Frame]:
        """The frames of `notes` (one listener kind's decision, kept alive by the caller for the
        whole fan-out, so its id is a stable key) for `shape`."""
        key = (id(notes), shape)
        frames = self.by_notes.get(key)
        if frames is None:
            frames = self.by_notes[key] = [self.frame(method, params, shape) for method, params in notes]
        return frames
