"""Is every document the registry references really in the content store, unchanged?

Used by `manage.py registry_check` (every version, review and draft; bytes re-hashed, or with
`--quick` sizes compared) and by the admin, which warns on an entry whose draft or served
versions reference content the store no longer has, or has damaged (a short object).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from registry.kinds import KINDS
from registry.models import ContentObject, PromptMessage, Resource, ReviewRequest, VersionedEntry
from registry.storage import blobs as content


@dataclass(frozen=True)
class Problem:
    sha256: str
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: content {self.sha256} {self.detail}"


def refs_in(snapshot: Any) -> Iterator[tuple[str, int | None]]:
    """Every (content hash, recorded size) a snapshot references (resources, embedded
    resources, images, audio); the size is None where the snapshot does not record one."""
    if isinstance(snapshot, dict):
        sha = snapshot.get("sha256")
        if isinstance(sha, str) and sha:
            size = snapshot.get("size")
            yield sha, size if isinstance(size, int) and not isinstance(size, bool) else None
        for value in snapshot.values():
            if isinstance(value, (dict, list)):
                yield from refs_in(value)
    elif isinstance(snapshot, list):
        for value in snapshot:
            yield from refs_in(value)


def hashes_in(snapshot: Any) -> Iterator[str]:
    """Every content hash a snapshot references."""
    for sha, _size in refs_in(snapshot):
        yield sha


class _Checker:
    """One verdict per object, whatever references it: a hash named by many versions is read once."""

    def __init__(self, verify: bool) -> None:
        self.verify = verify
        self.seen: dict[str, str | None] = {}
        self.recorded: dict[str, int] = {}

    def remember_sizes(self, shas: list[str]) -> None:
        for start in range(0, len(shas), 500):
            self.recorded.update(ContentObject.objects.filter(sha256__in=shas[start:start + 500])
                                 .values_list("sha256", "size"))

    def check(self, sha: str, size: int | None, where: str) -> Problem | None:
        if sha not in self.seen:
            expected = size if size is not None else self.recorded.get(sha)
            try:
                self.seen[sha] = content.problem(sha, expected, verify=self.verify)
            except ValueError:
                self.seen[sha] = "is not a valid SHA-256"
        detail = self.seen[sha]
        return Problem(sha, where, detail) if detail else None


def check_all(verify: bool = True) -> list[Problem]:
    """Every reference from versions, pending reviews and drafts; `verify` re-hashes the bytes,
    otherwise each object's size is compared with the size recorded for it."""
    checker = _Checker(verify)
    refs: list[tuple[str, int | None, str]] = []
    for kind in KINDS.values():
        rows = kind.version_model.objects.select_related("entry").order_by("entry_id", "number")
        for version in rows.iterator():
            refs += [(sha, size, f"{kind.name} {version.entry.key} v{version.number}")
                     for sha, size in refs_in(version.snapshot)]
    for review in ReviewRequest.objects.exclude(snapshot=None).order_by("pk"):
        refs += [(sha, size, f"review #{review.pk}") for sha, size in refs_in(review.snapshot)]
    for resource in Resource.objects.exclude(data_sha256="").order_by("pk"):
        refs.append((resource.data_sha256, resource.data_size, f"draft of resource {resource.uri}"))
    for message in PromptMessage.objects.exclude(data_sha256="").select_related("prompt").order_by("pk"):
        refs.append((message.data_sha256, message.data_size,
                     f"draft of prompt {message.prompt.name} message {message.position + 1}"))
    if not verify:
        checker.remember_sizes(sorted({sha for sha, size, _where in refs if size is None}))
    return [problem for sha, size, where in refs if (problem := checker.check(sha, size, where))]


def problems_for_entry(entry: VersionedEntry) -> list[Problem]:
    """References of this entry's draft and of the versions its labels serve that the store
    lacks or holds damaged (size compared: one stat per object)."""
    checker = _Checker(verify=False)
    refs: list[tuple[str, int | None, str]] = []
    if isinstance(entry, Resource) and entry.data_sha256:
        refs.append((entry.data_sha256, entry.data_size, "the draft"))
    if entry.kind == "prompt":
        refs += [(m.data_sha256, m.data_size, f"the draft's message {i}")
                 for i, m in enumerate(entry.messages.all(), start=1) if m.data_sha256]  # type: ignore[attr-defined]
    for label in entry.labels.select_related("version"):
        refs += [(sha, size, f"v{label.version.number} ({label.name})")
                 for sha, size in refs_in(label.version.snapshot)]
    checker.remember_sizes(sorted({sha for sha, size, _where in refs if size is None}))
    return [problem for sha, size, where in refs if (problem := checker.check(sha, size, where))]
