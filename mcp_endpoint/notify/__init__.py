"""Notifications: registry changes in, per-listener MCP notifications out.

The hub (per process) learns of committed changes, judges each open stream's listener on what
it is served, and queues its notifications; the transport's stream loops carry them. Also here:
the replay of a resumed legacy GET stream, the change-log ids a process has applied, and the
revocation of streams whose credentials changed.
"""
