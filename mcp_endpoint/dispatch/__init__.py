"""Protocol dispatch: which wire generation a message speaks, whether it is valid, which handler
answers it, and what goes back.

``dispatcher`` routes an HTTP request to the legacy wire (``legacy``: initialize, sessions, GET
streams, batches) or the 2026-07-28 one (``modern``: stateless, ``_meta`` on every request);
``stdio`` serves one stdio connection with both. ``ladder`` validates a 2026-07-28 request,
``methods`` holds the method tables, ``replies`` maps every exception to a JSON-RPC error and an
HTTP status in one place, ``streams`` sets up the long-lived streams the transport carries, and
``discovery`` says what this server is and serves.
"""
