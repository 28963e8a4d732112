"""Which clients a percentage rollout reaches: a stable bucket per client and entry.

Pure functions (no Django): the serving side decides with them who gets a candidate, the
release side (registry/release/rollouts.py) and the admin's fetch statistics explain it.
"""

from __future__ import annotations

import hashlib


def stable_bucket(client_name: str, entry_key: str) -> int:
    """0-99 for this client and entry; depends on nothing but the two strings."""
    digest = hashlib.sha256(f"{client_name}\x00{entry_key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 100


def gets_candidate(client_name: str, entry_key: str, percent: int) -> bool:
    """Whether a client is in the rollout's share; anonymous callers ('' name) never are."""
    return bool(client_name) and stable_bucket(client_name, entry_key) < percent
