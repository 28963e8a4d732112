"""One short async function per MCP method, a module per feature area: adapters onto the registry.

Handlers take the request's context and params and return result dicts (or pre-serialised
:class:`~mcp_endpoint.wire.jsonrpc.RawJSON` for cached pages) already shaped for the request's
revision. Domain errors propagate; the dispatcher maps them through ``domain_errors``.
``reads`` is the only module here that names the registry.

Hot path (list/get/read with the label's catalog in memory): no database query, no thread hop.
"""
