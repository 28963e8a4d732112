"""manage.py registry_export PATH   (PATH '-' writes to standard output)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand

from registry.portable.importer import export_yaml


class Command(BaseCommand):
    help = "Write the draft of every entry as YAML that registry_import reads back unchanged."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="Output file, or - for standard output.")
        parser.add_argument("--include-archived", action="store_true", help="Also export archived entries.")

    def handle(self, *args: Any, path: str, include_archived: bool, **options: Any) -> None:
        text = export_yaml(include_archived=include_archived)
        if path == "-":
            self.stdout.write(text, ending="")
            return
        Path(path).write_text(text, encoding="utf-8")
        if options.get("verbosity", 1) >= 1:
            self.stderr.write(f"wrote {path}")
