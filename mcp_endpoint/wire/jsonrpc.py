"""JSON-RPC 2.0 envelopes: parse, classify, serialise. Pure Python (orjson when installed).

Results may be handed over pre-serialised as :class:`RawJSON` so hot list pages are encoded
once and spliced into each response envelope.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import InvalidRequest, McpError, ParseError

try:  # orjson is optional: ~3-5x faster encode/decode on the hot path.
    import orjson as _orjson

    def dumps(obj: Any) -> bytes:
        return _orjson.dumps(obj)

    def loads(data: bytes | str) -> Any:
        return _orjson.loads(data)

    _DECODE_ERRORS: tuple[type[Exception], ...] = (_orjson.JSONDecodeError, UnicodeDecodeError)
    HAVE_ORJSON = True
except ImportError:  # pragma: no cover - exercised when orjson is absent
    _encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)

    def dumps(obj: Any) -> bytes:
        return _encoder.encode(obj).encode("utf-8")

    def loads(data: bytes | str) -> Any:
        return json.loads(data)

    _DECODE_ERRORS = (ValueError, UnicodeDecodeError, RecursionError)  # deep nesting: a parse error, not a crash
    HAVE_ORJSON = False


class RawJSON:
    """An already serialised JSON value (bytes) to embed verbatim."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"RawJSON({self.data[:60]!r}...)"


@dataclass(frozen=True, slots=True)
class Message:
    """One incoming JSON-RPC message. ``kind`` is "request", "notification" or "response"."""

    kind: str
    method: str | None
    id: Any
    params: dict[str, Any]
    raw: dict[str, Any]

    @property
    def is_request(self) -> bool:
        return self.kind == "request"


def parse_body(body: bytes) -> Any:
    """Decode bytes to a JSON value; raise :class:`ParseError` on malformed input."""
    try:
        return loads(body)
    except _DECODE_ERRORS as exc:
        raise ParseError("Parse error: body is not valid JSON") from exc


def classify(obj: Any) -> Message:
    """Validate one JSON-RPC 2.0 object and classify it. Raises :class:`InvalidRequest`."""
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        raise InvalidRequest("Invalid request: not a JSON-RPC 2.0 object")
    method = obj.get("method")
    if method is None:
        if "id" in obj and ("result" in obj or "error" in obj):
            return Message("response", None, obj.get("id"), {}, obj)
        raise InvalidRequest("Invalid request: missing method")
    if not isinstance(method, str):
        raise InvalidRequest("Invalid request: method must be a string")
    params = obj.get("params")
    if params is None:
        params = {}
    elif not isinstance(params, dict):
        raise InvalidRequest("Invalid request: params must be an object")
    if "id" not in obj:
        return Message("notification", method, None, params, obj)
    rid = obj["id"]
    if rid is None or isinstance(rid, bool) or not isinstance(rid, (str, int)):
        raise InvalidRequest("Invalid request: id must be a string or an integer")
    return Message("request", method, rid, params, obj)


def request_id_of(obj: Any) -> Any:
    """Best-effort id of a (possibly invalid) message, for error replies."""
    if isinstance(obj, dict):
        rid = obj.get("id")
        if isinstance(rid, (str, int)) and not isinstance(rid, bool):
            return rid
    return None


def encode_result(rid: Any, result: dict[str, Any] | RawJSON) -> bytes:
    if isinstance(result, RawJSON):
        return b'{"jsonrpc":"2.0","id":' + dumps(rid) + b',"result":' + result.data + b"}"
    return dumps({"jsonrpc": "2.0", "id": rid, "result": result})


def encode_error(rid: Any, error: McpError | dict[str, Any]) -> bytes:
    err = error.to_error() if isinstance(error, McpError) else error
    return dumps({"jsonrpc": "2.0", "id": rid, "error": err})


def encode_notification(method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return dumps(msg)


def encode_batch(items: list[bytes]) -> bytes:
    return b"[" + b",".join(items) + b"]"
