"""Two snapshots (or an audit entry's recorded changes) -> what a person reads in a diff.

One package behind every diff the admin shows (compare page, publish / request / label / restore
confirmations, the review page, history and the audit log), so they all speak the same words:
fields in the order of the edit form and with its labels, "not set" instead of `null`,
Yes/No instead of True/False, arguments as a table, messages as chat bubbles with word-level
insertions and deletions, documents as their text diff (binary files as type, size and short
hash), and keys the schema does not know shown generically after the known ones.

Which fields there are, what they are called and how each compares is the snapshot schema's
(registry/authoring/schema.py), so every field a snapshot carries appears here. It returns plain
data (dataclasses of strings); templates render it, auto-escaped, so nothing here builds HTML.
No database access, except the document texts a page's `load` reads from the content store.

Its modules, each importing only those above it:

- `changes`   what a diff holds (EntryDiff, Section, FieldChange, ...) and its one-line summaries
- `words`     the inline word diff of two texts
- `values`    one snapshot value (or document) in words
- `fields`    one field compared: a FieldChange, or nothing when it did not change
- `tables`    arguments / variables compared row by row
- `messages`  messages paired and compared as chat bubbles
- `sections`  `build`: two snapshots -> an EntryDiff (callers start here)
- `recorded`  `from_changes` / `change_summary`: an audit entry's recorded changes -> an EntryDiff
"""
