"""The MCP endpoint: Streamable HTTP and stdio transports over the registry's read side.

Layers (imports point downward only):
    consumers / management.commands.mcp_stdio  -> dispatcher -> handlers -> registry
    jsonrpc, sse, errors, versions, shapes, pagination: pure helpers, no Django, no registry.
"""
