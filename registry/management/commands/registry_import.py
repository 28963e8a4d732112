"""manage.py registry_import PATH [--dry-run] [--watch] [--publish --note TEXT] [--as-user USERNAME]"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from registry.errors import StorageUnavailable
from registry.portable.importer import ImportFailed, ImportReport, import_documents
from registry.portable.watching import settle_heap, watch_imports

MAX_VALUE = 120


def _short(value: Any) -> str:
    text = "∅" if value is None else repr(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


class Command(BaseCommand):
    help = (
        "Import prompts, resources and templates from a YAML file or a folder of YAML files (format: "
        "registry/portable/format.py). All files are one transaction; re-importing unchanged files changes nothing. "
        "With --watch, import again whenever a YAML or side file changes, until SIGINT/SIGTERM. "
        "It runs as the server operator: with --publish, protected labels such as production move as an "
        "automatic emergency override, recorded in the audit log as 'command line (operator)'."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", help="The YAML file, or a folder of YAML files (*.yaml, *.yml).")
        parser.add_argument("--dry-run", action="store_true", help="Show what would change and save nothing.")
        parser.add_argument("--watch", action="store_true",
                            help="Keep running: re-import after every change to the files, one line per round.")
        parser.add_argument("--publish", action="store_true",
                            help="Publish drafts that differ from their newest version and point their labels at it.")
        parser.add_argument("--note", default="", help="Change note (required with --publish).")
        parser.add_argument("--as-user", default="", metavar="USERNAME",
                            help="Import as this user instead of the operator: their permissions and their "
                                 "teams' folders apply (an entry in a folder another team owns is a problem).")

    def handle(self, *args: Any, path: str, dry_run: bool, publish: bool, note: str, watch: bool = False,
               **options: Any) -> None:
        if publish and not note.strip():
            raise CommandError("--publish needs --note TEXT: say what changed and why.")
        acting_user = self._user(options.get("as_user") or "")
        if watch:
            self._watch(Path(path), publish=publish, note=note, dry_run=dry_run, acting_user=acting_user)
            return
        try:
            report = import_documents(path, publish=publish, note=note, dry_run=dry_run, acting_user=acting_user)
        except ImportFailed as exc:
            for problem in exc.problems:
                self.stderr.write(problem)
            raise CommandError(f"{len(exc.problems)} problem(s); nothing was imported.") from exc
        except StorageUnavailable as exc:  # a full or read-only disk: the import rolled back
            raise CommandError(f"{exc.message}; nothing was imported.") from exc
        self._print(report, verbosity=options.get("verbosity", 1), dry_run=dry_run)

    @staticmethod
    def _user(username: str) -> Any:
        """The active user `--as-user` names, or None (the operator)."""
        if not username:
            return None
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"--as-user {username}: no active user of that name.")
        return user

    def _watch(self, path: Path, *, publish: bool, note: str, dry_run: bool, acting_user: Any = None) -> None:
        """Run until SIGINT or SIGTERM; a round in progress finishes (or rolls back) first."""
        if dry_run:
            raise CommandError("--watch and --dry-run do not go together: a watcher saves what the files say.")
        if not path.exists():
            raise CommandError(f"{path}: no such file or folder.")
        stop = threading.Event()
        previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
        def log(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()

        try:
            self.stdout.write(f"watching {path.resolve()} (Ctrl-C to stop)")
            watch_imports(path, publish=publish, note=note, stop=stop, log=log, acting_user=acting_user,
                          after_round=settle_heap)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.stdout.write("stopped watching")

    def _print(self, report: ImportReport, *, verbosity: int, dry_run: bool) -> None:
        if verbosity >= 1:
            for outcome in report.outcomes:
                for warning in outcome.warnings:
                    self.stderr.write(f"warning: {warning}")
                if not outcome.changed and verbosity < 2:
                    continue
                line = f"{outcome.status} {outcome.kind} {outcome.key}"
                if outcome.published is not None:
                    line += f"; published v{outcome.published}"
                if outcome.labels_moved:
                    line += "; moved " + ", ".join(outcome.labels_moved)
                self.stdout.write(line)
                show_values = dry_run or verbosity >= 2
                if outcome.status == "updated" or (outcome.status == "created" and verbosity >= 2):
                    for change in outcome.changes:
                        if show_values:
                            self.stdout.write(f"    {change['field']}: {_short(change['before'])} -> "
                                              f"{_short(change['after'])}")
                        else:
                            self.stdout.write(f"    {change['field']}")
        self.stdout.write(report.summary())
