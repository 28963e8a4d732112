"""The guard over this project's use of daphne's and Twisted's private names.

mcp_endpoint/transport/daphne_server.py holds the patches (and the USES table of which of its
functions each feature runs); this module holds what they rely on, name by name, and checks each
on the installed versions: class attributes directly, the attributes a channel or connection only
gets once it runs on a probe instance driven through a fake transport. A feature whose names are
not all there falls back to the plain path (Twisted's and daphne's own behaviour, correct and
only slower or blunter): `log_fallback` logs it once, and `check_patches` (registered in
``McpEndpointConfig.ready``) makes ``manage.py check`` warn about it. Two modules, one subject:
the patches file would pass the 600-line bound with the guard in it.

Nothing here imports ``daphne.server`` (its import installs Twisted's asyncio reactor): the
server's names are read from its source (``connections`` is only assigned once it runs).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import logging
import socket
import sys
from collections.abc import Sequence
from typing import Any

log = logging.getLogger("mcp_endpoint.transport.daphne_server")  # one logger for the patches and their guard

HEAD_LIMITS, BODY_LIMITS, HEAD_TIMEOUT, EAGER_WRITES, DIRECT_SEND = (
    "head limits", "body limits", "head timeout", "eager writes", "direct send")
FEATURES = (HEAD_LIMITS, BODY_LIMITS, HEAD_TIMEOUT, EAGER_WRITES, DIRECT_SEND)
FALLBACKS = {
    HEAD_LIMITS: "oversized or malformed request heads are dropped or get a bare 400 from Twisted",
    BODY_LIMITS: "bodies are spooled whole by Twisted and refused by the application afterwards",
    HEAD_TIMEOUT: "a request head that does not arrive is only ended by Twisted's idle timeout",
    EAGER_WRITES: "every write waits for the reactor's next turn (slower fan-out)",
    DIRECT_SEND: "notifications wake each stream's task (slower fan-out; no cut-off of a client that stops reading)",
}

# What _refuse, shared by the three features that refuse a request, does to a channel and its transport.
_REFUSAL_CHANNEL = ("dataReceived", "lineReceived", "rawDataReceived", "allContentReceived", "callLater",
                    "loseConnection")
_REFUSAL_TRANSPORT = ("write", "loseWriteConnection", "abortConnection")
# Names read or replaced on the classes themselves.
_CHANNEL_NAMES = {
    HEAD_LIMITS: ("MAX_LENGTH", "totalHeadersSize", "lineLengthExceeded", "_respondToBadRequestAndDisconnect",
                  "_receivedHeaderSize", *_REFUSAL_CHANNEL),
    BODY_LIMITS: ("allHeadersReceived", "length", *_REFUSAL_CHANNEL),
    HEAD_TIMEOUT: ("connectionMade", "connectionLost", "allHeadersReceived", "requestDone", "persistent",
                   *_REFUSAL_CHANNEL),
    DIRECT_SEND: ("_waitingForTransport",),
}
# gotLength is never called here: the body limit refuses before Twisted calls it (no file is made).
_REQUEST_NAMES = {BODY_LIMITS: ("handleContentChunk", "gotLength"),
                  # a direct body write: the state Request.write reads, and the byte count it keeps
                  DIRECT_SEND: ("startedWriting", "chunked", "finished", "_disconnected", "sentLength")}
_REQUEST_INIT = {BODY_LIMITS: ("channel",), DIRECT_SEND: ("channel",)}  # assigned by Request.__init__
# The transport a channel writes to: a TCP connection under daphne.
_TRANSPORT_NAMES = {HEAD_LIMITS: _REFUSAL_TRANSPORT, BODY_LIMITS: _REFUSAL_TRANSPORT,
                    HEAD_TIMEOUT: _REFUSAL_TRANSPORT, DIRECT_SEND: ("abortConnection", "write")}
_CONNECTION_NAMES = ("write", "writeSequence", "dataBuffer", "offset", "connected", "disconnecting",
                     "_writeDisconnected", "TLS", "_aborting")
# Names a channel only has once it is connected; once it has parsed a request head; a
# connection once it is built.
_CHANNEL_CONNECTED = {HEAD_LIMITS: ("transport",), BODY_LIMITS: ("transport",), HEAD_TIMEOUT: ("transport",),
                      DIRECT_SEND: ("transport",)}
_CHANNEL_RUNTIME = {BODY_LIMITS: ("_path", "requests", "length")}
_CONNECTION_RUNTIME = ("_tempDataLen", "socket")
_PROBE_HEAD = b"POST /probe HTTP/1.1\r\nHost: probe\r\nContent-Length: 4\r\n\r\n"
_DAPHNE_NAMES = ("handle_reply", "connections")  # WebRequest.handle_reply; Server.handle_reply, .connections
_DAPHNE_REQUEST_INIT = ("_response_started",)  # assigned by WebRequest.__init__


def guarded_names(feature: str) -> set[str]:
    """Every name `feature` relies on, wherever it lives (what the test holds the code to)."""
    names = {*_CHANNEL_NAMES.get(feature, ()), *_REQUEST_NAMES.get(feature, ()), *_REQUEST_INIT.get(feature, ()),
             *_TRANSPORT_NAMES.get(feature, ()), *_CHANNEL_CONNECTED.get(feature, ()),
             *_CHANNEL_RUNTIME.get(feature, ())}
    if feature == EAGER_WRITES:
        names |= {*_CONNECTION_NAMES, *_CONNECTION_RUNTIME}
    if feature == DIRECT_SEND:
        names |= {*_DAPHNE_NAMES, *_DAPHNE_REQUEST_INIT}
    return names


def _missing(obj: Any, names: Sequence[str], prefix: str) -> list[str]:
    return [f"{prefix}.{name}" for name in names if not hasattr(obj, name)]


def _probe_channel(http: Any, names: Sequence[str], head: bytes = b"") -> dict[str, Any]:
    """What a channel holds once connected and, given a `head`, once it has parsed it (the body
    limit reads it after the head of a POST with a body), over a fake transport and clock: no
    reactor, no socket."""
    from twisted.internet.task import Clock
    from twisted.internet.testing import StringTransport

    channel = http.HTTPChannel()
    channel.callLater = Clock().callLater
    channel.makeConnection(StringTransport())
    try:
        if head:
            channel.dataReceived(head)
        return {name: getattr(channel, name) for name in names if hasattr(channel, name)}
    finally:
        channel.connectionLost(None)


class NullReactor:
    """The reactor interface a tcp.Connection is built with, doing nothing: a connection built on
    it writes straight to its socket (the probe here, bench/stream_write.py)."""

    def addWriter(self, writer: Any) -> None:  # Twisted's interface
        pass

    def removeWriter(self, writer: Any) -> None:
        pass

    def addReader(self, reader: Any) -> None:
        pass

    def removeReader(self, reader: Any) -> None:
        pass


def _probe_connection(tcp: Any) -> Any:
    ours, peer = socket.socketpair()
    try:
        return tcp.Connection(ours, None, NullReactor())
    finally:
        ours.close()
        peer.close()


def _server_source_names() -> set[str]:
    """Methods of daphne.server.Server and the ``self.`` attributes it assigns, read from its
    source: importing the module would install Twisted's reactor in this process."""
    spec = importlib.util.find_spec("daphne.server")
    if spec is None or not spec.origin:
        return set()
    with open(spec.origin, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Server":
            for item in ast.walk(node):
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif (isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store)
                      and isinstance(item.value, ast.Name) and item.value.id == "self"):
                    names.add(item.attr)
    return names


def _init_names(cls: Any) -> tuple[str, ...]:
    """The attribute names ``cls.__init__`` uses (those it assigns among them)."""
    return getattr(getattr(getattr(cls, "__init__", None), "__code__", None), "co_names", ())


def _server_missing() -> list[str]:
    wanted = _DAPHNE_NAMES  # `connections` is assigned in Server.run, not __init__
    try:
        present = _server_source_names() & set(wanted)
    except (OSError, SyntaxError, ValueError):
        present = set()
    server = getattr(sys.modules.get("daphne.server"), "Server", None)
    if server is not None and not callable(getattr(server, "handle_reply", None)):
        present.discard("handle_reply")
    return [f"daphne.server.Server.{name}" for name in wanted if name not in present]


@functools.lru_cache(maxsize=1)
def diagnose() -> dict[str, tuple[str, ...]]:
    """For each feature, the private names it needs that the installed Twisted/daphne lack
    (empty: the feature can be installed). Cached: the answer does not change in a process."""
    missing: dict[str, list[str]] = {feature: [] for feature in FEATURES}
    try:
        from twisted.internet import tcp
        from twisted.web import http
    except ImportError as exc:
        return dict.fromkeys(FEATURES, (f"twisted ({exc})",))
    for feature, names in _CHANNEL_NAMES.items():
        missing[feature] += _missing(http.HTTPChannel, names, "HTTPChannel")
    for feature, names in _REQUEST_NAMES.items():
        missing[feature] += _missing(http.Request, names, "Request")
    for feature, names in _REQUEST_INIT.items():
        missing[feature] += [f"Request.{name}" for name in names if name not in _init_names(http.Request)]
    for feature, names in _TRANSPORT_NAMES.items():
        missing[feature] += _missing(tcp.Connection, names, "tcp.Connection")
    missing[EAGER_WRITES] += _missing(tcp.Connection, _CONNECTION_NAMES, "tcp.Connection")
    for runtime, head, when in ((_CHANNEL_CONNECTED, b"", "set once connected"),
                                (_CHANNEL_RUNTIME, _PROBE_HEAD, "set while parsing")):
        try:
            found = _probe_channel(http, sorted({name for names in runtime.values() for name in names}), head)
        except Exception as exc:  # any change in how a channel runs disables the patches that read it
            for feature in runtime:
                missing[feature].append(f"HTTPChannel {when} ({exc!r})")
            continue
        for feature, names in runtime.items():
            missing[feature] += [f"HTTPChannel.{name} ({when})" for name in names if name not in found]
        if head and (found.get("_path", b"/probe") != b"/probe" or found.get("length", 4) != 4):
            missing[BODY_LIMITS].append("HTTPChannel._path/length as parsed")
    try:
        missing[EAGER_WRITES] += _missing(_probe_connection(tcp), _CONNECTION_RUNTIME, "tcp.Connection (built)")
    except Exception as exc:
        missing[EAGER_WRITES].append(f"tcp.Connection construction ({exc!r})")
    try:
        from daphne import http_protocol
    except ImportError as exc:
        missing[DIRECT_SEND].append(f"daphne ({exc})")
    else:
        missing[DIRECT_SEND] += _missing(http_protocol.WebRequest, _DAPHNE_NAMES[:1],
                                         "daphne.http_protocol.WebRequest")
        if "channel" not in _init_names(http_protocol.WebRequest.__mro__[1]):
            missing[DIRECT_SEND].append("daphne.http_protocol.WebRequest.channel")
        missing[DIRECT_SEND] += [f"daphne.http_protocol.WebRequest.{name}" for name in _DAPHNE_REQUEST_INIT
                                 if name not in _init_names(http_protocol.WebRequest)]
        missing[DIRECT_SEND] += _server_missing()
    return {feature: tuple(names) for feature, names in missing.items()}


def available(feature: str) -> bool:
    return not diagnose()[feature]


def check_patches(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """System check: a warning for every feature that falls back because a name it relies on is
    missing from the installed Twisted or daphne."""
    from django.core import checks

    return [checks.Warning(
        f"The {feature} patch for daphne/Twisted is off: {', '.join(names)} not found in the installed "
        f"versions; {FALLBACKS[feature]}.",
        hint="Install the Twisted and daphne versions pyproject.toml names, or check mcp_endpoint/transport/"
             "daphne_guard.py and daphne_server.py against the new ones and widen the bounds.",
        obj="mcp_endpoint.transport.daphne_guard", id="mcp_endpoint.W001")
        for feature, names in diagnose().items() if names]


_logged: set[str] = set()


def log_fallback(feature: str) -> None:
    """Log once per process that `feature` is off, and why."""
    if feature not in _logged:
        _logged.add(feature)
        log.warning("daphne/Twisted internals changed: the %s patch is off (%s missing); %s", feature,
                    ", ".join(diagnose()[feature]), FALLBACKS[feature])
