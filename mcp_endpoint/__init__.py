"""The MCP endpoint: Streamable HTTP (``/mcp``) and stdio transports over the registry's read side.

Layers (imports point downward only)::

    routing.build_application ─┐
    consumers.McpHttpApp ──────┼─> dispatcher ──> handlers ──> registry.catalog / clients / fetches
    management/commands/mcp_stdio ┘      │
                                         └─> wire/sessions (McpSession rows + per-process cache)
    wire/ (no registry): jsonrpc, errors, versions, shapes, pagination, context, batches, sessions;
    sse

* ``consumers`` — HTTP only: verbs, Host/Origin (DNS rebinding), Accept (406), Content-Type
  (415), body limit (413), bearer auth (401), JSON vs SSE replies, the long-lived SSE loop.
  A raw ASGI class rather than ``AsyncHttpConsumer``: no per-message thread hop, and a stream
  can wait on disconnects and channel-layer events at once.
* ``dispatcher`` — one dual-era endpoint: 2026-07-28 (stateless; ``_meta`` + mirrored headers
  validated as -32602/-32020/-32022 with HTTP 400, removed methods -32601 with HTTP 404) and
  2025-11-25/06-18/03-26 (``initialize``, ``Mcp-Session-Id``, ``ping``, ``logging/setLevel``,
  ``resources/subscribe``, batches at 2025-03-26). Exceptions become JSON-RPC errors in one
  place (``as_mcp_error``/``error_reply``).
* ``handlers`` — one short adapter per method; the only module importing ``registry``.
  Serialised list pages and small reads are cached per (label, scope, revision, cursor,
  catalog generation), so a warm request makes no query and no thread hop.
* ``shapes`` — results are built in the newest shape and downgraded per negotiated revision.
"""
