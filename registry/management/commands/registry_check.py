"""manage.py registry_check [--quick]

Verifies that every document a version, a review or a draft references is in the content
store and still matches its SHA-256 (`--quick`: present and of the recorded size, one stat or
HEAD per object, no re-hashing; a write cut short shows as a short object). Prints each problem
and exits with status 1 when there is any, so monitoring and CI can run it.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from registry.authoring.integrity import check_all


class Command(BaseCommand):
    help = "Check that every referenced content hash exists in the content store and matches its bytes."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--quick", action="store_true",
                            help="Only check that the objects exist with their recorded sizes (no re-hashing).")

    def handle(self, *args: Any, quick: bool = False, **options: Any) -> None:
        problems = check_all(verify=not quick)
        for problem in problems:
            self.stderr.write(str(problem))
        if problems:
            self.stderr.write(f"{len(problems)} problem(s) in the content store.")
            raise SystemExit(1)
        self.stdout.write("Every referenced content object is present" + (" with its recorded size." if quick
                                                                          else " and intact."))
