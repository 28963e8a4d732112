"""The content store: write-once bytes under their SHA-256, their ledger rows, the served-content cache."""
