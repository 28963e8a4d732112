"""Folders: where an entry is filed for the people who edit it (`support/billing`).

A folder is an organisational attribute of the entry, like its place in a file cabinet: it is
not in the entry's snapshot, so it changes nothing an MCP client receives (no list, no read,
no served key, no content hash), needs no version and no review, and a move never makes a
request stale. It is audited all the same (action "folder_moved", one writer for the admin, the
REST API and the importer:
registry.authoring.drafts.record_folder_change), so "who moved it where" has an answer.

A folder is a path of segments of letters, digits, '-' and '_' joined by '/', without a leading
or trailing '/', stored lower-cased; the empty folder is the top level. Choosing a folder in a
filter also shows its sub-folders (`in_folder`).
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

FOLDER_MAX_LENGTH = 200
SEGMENT_MAX_LENGTH = 60
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")

FOLDER_HELP = _("Where the entry is filed, e.g. 'support/billing' (letters, digits, '-' and '_', folders "
                "separated by '/'). Only for finding it here: clients are not shown the folder.")


def normalise_folder(value: str | None) -> str:
    """The stored form of a folder: trimmed and lower-cased (validity is `validate_folder`'s)."""
    return (value or "").strip().lower()


def validate_folder(value: str | None) -> None:
    """Refuse a folder path that is not segments of letters, digits, '-' and '_' joined by '/'."""
    folder = normalise_folder(value)
    if not folder:
        return
    if len(folder) > FOLDER_MAX_LENGTH:
        raise ValidationError(_("A folder path is at most %(limit)s characters long."),
                              code="invalid_folder", params={"limit": FOLDER_MAX_LENGTH})
    segments = folder.split("/")
    if any(not _SEGMENT.fullmatch(segment) or len(segment) > SEGMENT_MAX_LENGTH for segment in segments):
        raise ValidationError(
            _("“%(folder)s” is not a folder path: use folder names of letters, digits, '-' and '_' (at most "
              "%(limit)s characters each) separated by single '/', with no '/' at the start or end and no "
              "'..', e.g. 'support/billing'."),
            code="invalid_folder", params={"folder": value, "limit": SEGMENT_MAX_LENGTH})


def folder_problem(value: str | None) -> str | None:
    """`validate_folder`'s message as text, or None: for the YAML checker and the REST API."""
    try:
        validate_folder(value)
    except ValidationError as exc:
        return " ".join(exc.messages)
    return None


def in_folder(folder: str, field: str = "folder") -> Q:
    """Entries in `folder` or any of its sub-folders ('support' matches 'support/billing', not 'supportx')."""
    folder = normalise_folder(folder).strip("/")
    return Q(**{field: folder}) | Q(**{f"{field}__startswith": f"{folder}/"})


def folder_and_parents(folders: set[str]) -> list[str]:
    """Every folder in use with the folders above it, sorted: the choices of a folder filter."""
    every: set[str] = set()
    for folder in folders:
        parts = folder.split("/")
        every.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    return sorted(every - {""})


def tagged(tag: str, field: str = "tags") -> Q:
    """Entries carrying `tag` (tags are stored normalised as 'a, b, c'): the other attribute a list is
    filed by; the admin's tag filter and the REST API's `?tag=` both ask this."""
    tag = tag.strip().lower()
    return (Q(**{field: tag}) | Q(**{f"{field}__startswith": f"{tag}, "}) | Q(**{f"{field}__endswith": f", {tag}"})
            | Q(**{f"{field}__contains": f", {tag}, "}))
