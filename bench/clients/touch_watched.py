"""Publish a new text for test://watched-resource, as the command-line operator (the matrix's trigger).

Run with the project's interpreter and the server's DATABASE_URL; the entry's other fields are
those of tests/fixtures/conformance.yaml, so only the text changes (an import is declarative).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY = """resources:
  - uri: test://watched-resource
    name: watched-resource
    description: The target of subscribe and unsubscribe.
    mime_type: text/plain
    text: "Watched resource content, edition {edition}"
"""


def main() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.management import call_command

    django.setup()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "watched.yaml"
        path.write_text(ENTRY.format(edition=time.time_ns()), encoding="utf-8")
        call_command("registry_import", str(path), publish=True, note="client matrix trigger", verbosity=0)


if __name__ == "__main__":
    main()
