"""Custom signals the registry sends across the app boundary.

registry_changed: sent after a transaction that changed served content has committed.
    sender: the ChangeBatch class
    batch:  a ChangeBatch listing what changed (change-log ids, entries, labels)
Receivers (the MCP endpoint's notifier) must not assume they run in any particular thread.
"""

from django.dispatch import Signal

registry_changed = Signal()
