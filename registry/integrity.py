"""Is every document the registry references really in the content store, unchanged?

Used by `manage.py registry_check` (every version, review and draft; bytes re-hashed) and
by the admin, which warns on an entry whose draft or served versions reference content the
store no longer has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from registry import content
from registry.errors import ContentMissing
from registry.kinds import KINDS
from registry.models import PromptMessage, Resource, ReviewRequest, VersionedEntry


@dataclass(frozen=True)
class Problem:
    sha256: str
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: content {self.sha256} {self.detail}"


def hashes_in(snapshot: Any) -> Iterator[str]:
    """Every content hash a snapshot references (resources, embedded resources, images, audio)."""
    if isinstance(snapshot, dict):
        sha = snapshot.get("sha256")
        if isinstance(sha, str) and sha:
            yield sha
        for value in snapshot.values():
            if isinstance(value, (dict, list)):
                yield from hashes_in(value)
    elif isinstance(snapshot, list):
        for value in snapshot:
            yield from hashes_in(value)


def _check(sha: str, where: str, verify: bool, seen: dict[str, str | None]) -> Problem | None:
    if sha not in seen:
        detail: str | None = None
        try:
            if verify:
                content.read(sha)
            elif not content.exists(sha):
                detail = "is missing from the content store"
        except ContentMissing as exc:
            detail = "does not match its hash" if "match" in exc.message else "is missing from the content store"
        except ValueError:
            detail = "is not a valid SHA-256"
        seen[sha] = detail
    detail = seen[sha]
    return Problem(sha, where, detail) if detail else None


def check_all(verify: bool = True) -> list[Problem]:
    """Every reference from versions, pending reviews and drafts; `verify` re-hashes the bytes."""
    seen: dict[str, str | None] = {}
    problems: list[Problem] = []
    for kind in KINDS.values():
        rows = kind.version_model.objects.select_related("entry").order_by("entry_id", "number")  # type: ignore[attr-defined]
        for version in rows.iterator():
            for sha in hashes_in(version.snapshot):
                problem = _check(sha, f"{kind.name} {version.entry.key} v{version.number}", verify, seen)
                if problem:
                    problems.append(problem)
    for review in ReviewRequest.objects.exclude(snapshot=None).order_by("pk"):
        for sha in hashes_in(review.snapshot):
            problem = _check(sha, f"review #{review.pk}", verify, seen)
            if problem:
                problems.append(problem)
    for resource in Resource.objects.exclude(data_sha256="").order_by("pk"):
        problem = _check(resource.data_sha256, f"draft of resource {resource.uri}", verify, seen)
        if problem:
            problems.append(problem)
    for message in PromptMessage.objects.exclude(data_sha256="").select_related("prompt").order_by("pk"):
        problem = _check(message.data_sha256, f"draft of prompt {message.prompt.name} message {message.position + 1}",
                         verify, seen)
        if problem:
            problems.append(problem)
    return problems


def missing_for_entry(entry: VersionedEntry) -> list[Problem]:
    """References of this entry's draft and of the versions its labels serve that the store lacks."""
    seen: dict[str, str | None] = {}
    found: list[Problem] = []
    refs: list[tuple[str, str]] = []
    if isinstance(entry, Resource) and entry.data_sha256:
        refs.append((entry.data_sha256, "the draft"))
    if entry.kind == "prompt":
        refs += [(m.data_sha256, f"the draft's message {i}")
                 for i, m in enumerate(entry.messages.all(), start=1) if m.data_sha256]  # type: ignore[attr-defined]
    for label in entry.labels.select_related("version"):  # type: ignore[attr-defined]
        refs += [(sha, f"v{label.version.number} ({label.name})") for sha in hashes_in(label.version.snapshot)]
    for sha, where in refs:
        problem = _check(sha, where, False, seen)
        if problem:
            found.append(problem)
    return found
