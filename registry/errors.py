"""Domain errors raised by registry services and the read side.

Each carries enough detail for the caller (admin, importer, MCP handler) to name the
problem and the place; mapping to HTTP or JSON-RPC codes happens outside the registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class RegistryError(Exception):
    """Base class for every error the registry reports to a caller."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnknownPrompt(RegistryError):
    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown prompt: {name}")
        self.name = name


class UnknownResource(RegistryError):
    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri}")
        self.uri = uri


class InvalidArguments(RegistryError):
    """Arguments of the wrong type, or values that make the rendered prompt invalid."""


class ArgumentErrors(InvalidArguments):
    """Every argument a render refused at once: `missing` names, `invalid` [{name, reason}]."""

    def __init__(self, missing: list[str], invalid: list[dict[str, str]]) -> None:
        parts = []
        if missing:
            parts.append("Missing required argument(s): " + ", ".join(missing))
        if invalid:
            parts.append("Invalid argument(s): " + "; ".join(f"{i['name']} {i['reason']}" for i in invalid))
        super().__init__(". ".join(parts))
        self.missing = missing
        self.invalid = invalid


class MissingArguments(ArgumentErrors):
    """Only required arguments are absent; every given value was acceptable."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(names, [])
        self.names = names


class InvalidUri(RegistryError):
    def __init__(self, uri: str, reason: str) -> None:
        super().__init__(f"Invalid URI {uri!r}: {reason}")
        self.uri = uri
        self.reason = reason


class TemplateSyntaxError(RegistryError):
    """A placeholder template that cannot be parsed; `line` is 1-based."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(f"Line {line}: {message}")
        self.line = line
        self.detail = message


class ImmutableVersionError(RegistryError):
    """Someone tried to change or delete a published version."""


class NothingToPublish(RegistryError):
    """The draft is identical to the newest published version."""


class PublishPermissionDenied(RegistryError):
    """The acting user may not publish, move labels or roll back."""


class FolderOwnershipDenied(PublishPermissionDenied):
    """The entry's folder is owned by a team the acting user is not in (registry.roles.folder_refusal)."""

    def __init__(self, message: str, folder: str = "") -> None:
        super().__init__(message)
        self.folder = folder
        self.audit: dict[str, Any] | None = None  # what its `refused` audit row names (registry.refusals)


class InvalidEntry(RegistryError):
    """A draft that cannot be published as it stands; `problems` lists each one."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class ApprovalRequired(RegistryError):
    """A protected label would move without an approved review or an explicit, permitted override."""


class NotAnOlderVersion(RegistryError):
    """A rollback to a version that is not older than the one the label serves now (that is a move forward)."""


class SelfApproval(RegistryError):
    """The requester tried to approve (or reject) their own review request."""


class DraftConflict(RegistryError):
    """A save based on an older revision of a draft: someone else saved it in between."""

    def __init__(self, message: str, *, current_revision: int) -> None:
        super().__init__(message)
        self.current_revision = current_revision


class StaleReview(RegistryError):
    """The request no longer describes what would happen: the draft or the label changed since."""


class ReviewClosed(StaleReview):
    """The review request was already approved, rejected or withdrawn."""


class InvalidRollout(RegistryError):
    """A rollout that cannot be started or changed as asked (percent outside 0-100, unknown version...)."""


class RolloutConflict(RegistryError):
    """A rollout change made on a state that is no longer current: the caller named the state it
    read (`precondition`, HTTP If-Match) and it changed since, or the change would replace a
    rollout of another candidate that the caller did not say it saw. `current_state` is the
    state now (the rollout's entity tag)."""

    def __init__(self, message: str, *, current_state: str, precondition: bool) -> None:
        super().__init__(message)
        self.current_state = current_state
        self.precondition = precondition


class BulkUpdateRefused(RegistryError):
    """A QuerySet.update() would change what clients are served without notifying or auditing."""


class ContentMissing(RegistryError):
    """Bytes a draft or version references by hash are not in the content store (or do not match it).

    `damaged`: an object of that name is stored but its bytes are not the ones referenced."""

    def __init__(self, sha256: str, detail: str = "is missing from the content store", *,
                 damaged: bool | None = None) -> None:
        super().__init__(f"Content {sha256[:12]} {detail}.")
        self.sha256 = sha256
        self.detail = detail
        self.damaged = damaged if damaged is not None else detail.startswith(("is damaged", "does not match"))


class StorageUnavailable(Exception):
    """The content store refused a read or write: full, read-only or unreachable. `reason`:
    full, read_only, unavailable.

    Not a RegistryError: callers that collect RegistryErrors as problems with the request (the
    importer, the admin's forms) must not report an outage as bad input; it reaches the front
    end, which answers it as a temporary outage (registry/storage/outages.py)."""

    def __init__(self, operation: str, detail: str, *, reason: str = "unavailable") -> None:
        self.message = f"The content store could not {operation} ({reason.replace('_', '-')}): {detail}"
        super().__init__(self.message)
        self.operation = operation
        self.reason = reason


class ContentTooLarge(RegistryError):
    """Bytes larger than REGISTRY_MAX_UPLOAD_BYTES."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"The content is {size} bytes; the limit (REGISTRY_MAX_UPLOAD_BYTES) is {limit} bytes.")
        self.size = size
        self.limit = limit
