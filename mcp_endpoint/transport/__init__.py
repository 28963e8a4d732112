"""Transports: bytes in and out, and nothing of the protocol.

HTTP: the ASGI app for ``/mcp`` (verbs, Host/Origin, Accept/Content-Type, body limits, bearer
auth, JSON vs SSE replies), SSE framing, the long-lived stream loop and everything that knows
daphne's and Twisted's internals. stdio: the line loop behind ``manage.py mcp_stdio``. What a
message means is the dispatch's business (mcp_endpoint/dispatch/).
"""
