"""Watched folders: files on disk are the source of truth for the entries they define.

`watch_imports` starts watching, imports a YAML file or folder once, then again whenever a YAML
file or a `file:` side file under it changes. Watching starts first, so an edit made while the
first import (or any round) runs is seen and imported by the next round: no window loses one.
File events come from the `watchfiles` library (native
notifications, not a polling loop). A burst of changes (a `git pull` touching forty files)
is one round: watchfiles groups events until none arrived for `QUIET_MS` (its `step`), up to
`BURST_MS` (its `debounce`). Each round is one import, so one transaction: a broken file saves
nothing of that round and the last good state keeps being served. The registry announces a
round's changes once, after its commit. A round imports what changed: only files whose bytes (or
side files' bytes) changed are parsed again (registry.portable.parsed), and only entries whose
digest differs from what the registry holds are compared and written (registry.portable.unchanged);
its outcome is what importing the whole path would give.

The watcher's process keeps every file's parsed entries (hundreds of thousands of objects at
5,000 + 5,000 entries), and Python's cyclic garbage collector walks all of them in each full
collection; one fell inside nearly every round, 0.5-0.8 s of a 2 s round on a busy machine. So
the command settles the heap after each round's commit and log line (`settle_heap`): one full
collection there, off the path from a save to the notification, then the survivors are frozen
so collections during the next round walk only what that round allocates.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import watchfiles
from django.db import close_old_connections, connection

from registry.errors import StorageUnavailable
from registry.portable.format import FormatError
from registry.portable.importer import ImportFailed, ImportReport, check_unique, import_documents, import_specs
from registry.portable.parse import YAML_SUFFIXES, is_hidden
from registry.portable.parsed import ParsedFiles

QUIET_MS = 300  # a round starts once the files were quiet this long...
BURST_MS = 3000  # ...or at the latest this long after the first change of a burst
ARM_MS = 200  # how long the first wait for changes lasts: it only starts the native watcher


@dataclass
class Round:
    """The outcome of one import round: a report, or the problems that refused it."""

    report: ImportReport | None = None
    problems: tuple[str, ...] = ()
    side_files: frozenset[Path] = frozenset()  # `file:` paths the YAML files named

    @property
    def ok(self) -> bool:
        return self.report is not None

    def line(self) -> str:
        """One log line, e.g. 'resources: 1 updated; published 1'."""
        if self.report is not None:
            return self.report.summary()
        return (f"import refused, nothing saved, the last good state is still served: {len(self.problems)} "
                "problem(s): " + " | ".join(self.problems))


def import_round(path: Path, *, publish: bool, note: str, parsed: ParsedFiles | None = None,
                 changed: Iterable[Path] = (), acting_user: Any = None) -> Round:
    """Import `path` once as the command-line operator (or as `acting_user`, whose rights, team
    ownership of folders among them, then apply); a refused import is reported, not raised.

    With `parsed` (the watcher's), only files whose bytes changed, or that `changed` names, are
    parsed again; entries are then imported only where their digest differs from what the registry
    holds (registry.portable.parsed, registry.portable.unchanged). The outcome is what importing
    the whole path would give."""
    if not connection.in_atomic_block:
        close_old_connections()  # a long-running watcher outlives database connections
    try:
        if parsed is None:
            report = import_documents(path, publish=publish, note=note, acting_user=acting_user)
        else:
            try:
                specs, side_files = parsed.read(path, changed)
                check_unique(specs)
            except FormatError as exc:
                raise ImportFailed(exc.problems, parsed.side_files) from exc
            report = import_specs(specs, label=parsed.label, side_files=side_files, publish=publish, note=note,
                                  acting_user=acting_user)
        return Round(report=report, side_files=report.side_files)
    except ImportFailed as exc:
        return Round(problems=tuple(exc.problems), side_files=exc.side_files)
    except StorageUnavailable as exc:  # a full or read-only disk: the next round tries again
        return Round(problems=(exc.message,))


class _Relevant(watchfiles.DefaultFilter):
    """The watched YAML files (all of a folder's, or the one file) and the side files they name.

    Side files live inside the YAML file's folder (registry.portable.format), so watching the folder
    sees them; other files there (logs, notes) start no round. Hidden files are ignored."""

    def __init__(self, root: Path, only_yaml: Path | None) -> None:
        super().__init__()
        self.root = root
        self.only_yaml = only_yaml
        self.side_files: set[Path] = set()

    def __call__(self, change: watchfiles.Change, path: str) -> bool:
        candidate = Path(path).resolve()
        if not super().__call__(change, path) or is_hidden(candidate, self.root):
            return False
        if candidate in self.side_files:
            return True
        if candidate.suffix.lower() not in YAML_SUFFIXES:
            return False
        return self.only_yaml is None or candidate == self.only_yaml


def settle_heap() -> None:
    """Collect everything once, then keep the survivors out of later collections (module docstring).

    Unfrozen first, so what was frozen after an earlier round and has become garbage since (a
    changed file's old entries, a closed connection) is collected here too: nothing is kept
    longer than until the next round has been logged."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def watched_root(path: Path) -> tuple[Path, Path | None]:
    """(folder to watch, the single YAML file when `path` is a file)."""
    path = path.resolve()
    return (path, None) if path.is_dir() else (path.parent, path)


def watch_imports(
    path: str | Path,
    *,
    publish: bool,
    note: str,
    log: Callable[[str], None],
    stop: threading.Event,
    run_round: Callable[[], Round] | None = None,
    changes: Callable[..., Iterable[set[tuple[watchfiles.Change, str]]]] = watchfiles.watch,
    acting_user: Any = None,
    after_round: Callable[[], None] = lambda: None,
) -> int:
    """Import now and after every burst of file changes until `stop` is set; returns the rounds run.

    `after_round` runs once each round is committed and logged (the command passes `settle_heap`)."""
    path = Path(path)
    root, only_yaml = watched_root(path)
    parsed = ParsedFiles()  # each file's entries, parsed again only when its bytes change
    changed: set[Path] = set()  # what the batch being imported named
    run = run_round or (lambda: import_round(path, publish=publish, note=note, parsed=parsed, changed=changed,
                                              acting_user=acting_user))
    relevant = _Relevant(root, only_yaml)
    rounds = 0

    def one(reason: str, batch: Iterable[tuple[watchfiles.Change, str]] = ()) -> None:
        nonlocal rounds
        rounds += 1
        changed.clear()
        changed.update(Path(p) for _change, p in batch)
        outcome = run()
        relevant.side_files |= outcome.side_files  # a file named once stays watched: renaming it back is a change
        log(f"{reason}: {outcome.line()}")
        after_round()

    # The native watcher exists from the generator's first step on, and keeps what changes while
    # a round runs for the next step: arm it (a short wait that may find nothing), then import.
    batches = iter(changes(root, watch_filter=relevant, debounce=BURST_MS, step=QUIET_MS, stop_event=stop,
                           raise_interrupt=False, yield_on_timeout=True, rust_timeout=ARM_MS))
    early = next(batches, None)
    one("initial import")
    pending = [early] if early else []
    for batch in _chain(pending, batches):
        if stop.is_set():
            break
        if not batch:
            continue  # a timeout with nothing changed
        names = sorted({Path(p).name for _change, p in batch})
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        one(f"{len(names)} file(s) changed ({shown})", batch)
    return rounds


def _chain(first: list[set[tuple[watchfiles.Change, str]]],
           rest: Iterable[set[tuple[watchfiles.Change, str]]]) -> Iterable[set[tuple[watchfiles.Change, str]]]:
    yield from first
    yield from rest
