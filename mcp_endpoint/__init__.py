"""The MCP endpoint: Streamable HTTP (``/mcp``) and stdio transports over the registry's read side.

Layers (imports point downward only)::

    routing.build_application ──> transport/  (consumers: the /mcp ASGI app; stream_loop; sse;
    management/commands/mcp_stdio ──>          daphne_server; stdio: the line loop)
                                      │
                                      ▼
                                  dispatch/   (dispatcher: which wire; legacy; modern; stdio;
                                      │        ladder: the one 2026-07-28 validation; methods;
                                      │        replies: every error's code and status; streams)
                                      ▼
                                  handlers/   (one module per feature area) ──> registry
                                      │        through handlers/reads.py
                                      ▼
                                  notify/     (hub, diff, listeners, intake, handoff, replay,
                                      │        revocation) ──> registry through notify/reads.py
                                      ▼
                                  wire/       (jsonrpc, errors, versions, shapes, pagination,
                                               context, batches, sessions; no registry)

* ``transport`` — bytes in and out: HTTP verbs, Host/Origin (DNS rebinding), Accept (406),
  Content-Type (415), body limit (413), bearer auth (401), JSON vs SSE replies, the long-lived
  SSE loop; stdio lines. A raw ASGI class rather than ``AsyncHttpConsumer``: no per-message
  thread hop, and a stream can wait on disconnects and channel-layer events at once.
* ``dispatch`` — one dual-era endpoint: 2026-07-28 (stateless; ``_meta`` + mirrored headers
  validated as -32602/-32020/-32022 with HTTP 400, removed methods -32601 with HTTP 404) and
  2025-11-25/06-18/03-26 (``initialize``, ``Mcp-Session-Id``, ``ping``, ``logging/setLevel``,
  ``resources/subscribe``, batches at 2025-03-26). HTTP and stdio climb the same validation
  ladder; exceptions become JSON-RPC errors in one place (``replies``).
* ``handlers`` — one short adapter per method. Serialised list pages and small reads are cached
  per (label, scope, revision, cursor, catalog generation), so a warm request makes no query
  and no thread hop. A cold read starts the notification hub, and a subscription tells it.
* ``notify`` — per process, registry changes in and per-listener notifications out; what a
  change means to a listener is decided by the pure ``notify.diff``.
* ``wire`` — results are built in the newest shape and downgraded per negotiated revision.
"""
