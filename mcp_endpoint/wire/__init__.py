"""What goes over the wire, and nothing else: JSON-RPC envelopes and error codes, protocol
revisions and the headers that mirror them, result shapes per revision, list cursors, batch
bounds, the per-request context, and legacy sessions. No module here imports ``registry``;
``errors`` and ``jsonrpc`` import no Django either."""
