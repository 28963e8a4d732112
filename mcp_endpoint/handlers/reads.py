"""What the handlers read of the registry: the one module of handlers/ that names it.

:class:`RegistrySource` holds the entry points that reach the database or build catalogs, behind
one object that tests may replace piece by piece; the rest are the registry's errors, rules and
constants that the handlers need by name. Nothing here writes but a fetch count.
"""

from __future__ import annotations

from typing import Any

# One name a line, so that a registry module's new path is one line to change.
# isort: off
from registry.serving import catalogs
from registry.serving import pages as catalog_pages
from registry.serving import clients
from registry.serving import fetches
from registry.serving import warmup
from registry.serving.yielding import awaiting_build, serving
from registry.formats.argtypes import PATTERN_VALUE_MAX_LENGTH
from registry.formats.argtypes import form_schema
from registry.formats.argtypes import from_form
from registry.serving.catalog import ContentNotLoaded
from registry.serving.composed import SnippetUnavailable
from registry.serving.viewer import Viewer
from registry.serving.clients import TOKEN_PREFIX
from registry.serving.clients import hash_token
from registry.serving.clients import still_serves
from registry.errors import ArgumentErrors
from registry.errors import ContentMissing
from registry.errors import InvalidArguments
from registry.errors import InvalidUri
from registry.errors import MissingArguments
from registry.errors import RegistryError
from registry.errors import UnknownPrompt
from registry.errors import UnknownResource
from registry.models import PRODUCTION
from registry.storage.outages import outage_of
from registry.formats.uris import lookup_uri
# isort: on

__all__ = [
    "PATTERN_VALUE_MAX_LENGTH", "PRODUCTION", "TOKEN_PREFIX", "ArgumentErrors", "ContentMissing",
    "ContentNotLoaded", "InvalidArguments", "InvalidUri", "MissingArguments", "RegistryError",
    "RegistrySource", "SnippetUnavailable", "UnknownPrompt", "UnknownResource", "awaiting_build", "form_schema",
    "from_form", "hash_token", "lookup_uri", "outage_of", "serving", "source", "still_serves",
]


class RegistrySource:
    """The registry entry points the handlers use, behind one seam (tests may pass a fake)."""

    def cached_catalog(self, label: str) -> Any:
        return catalogs.cached_catalog(label)

    def load_catalog(self, label: str) -> Any:
        return catalogs.load_catalog(label)

    def warm_catalog(self, label: str) -> Any:
        """A concurrent Future of the label's whole catalog, built in a background thread."""
        return warmup.warm(label)

    def page_catalog(self, label: str, kind: str, viewer: Any, after: str | None, count: int) -> Any:
        """Sync, queries: a catalog answering one list page (the whole one if fresh by now)."""
        return catalog_pages.page_catalog(label, kind, viewer, after, count)

    def cached_page(self, label: str, kind: str, viewer: Any, after: str | None, count: int) -> Any:
        """No query: a catalog answering one list page from what is in memory (the whole one, or a
        run of the list read cold at this generation), or None."""
        return catalog_pages.cached_page(label, kind, viewer, after, count)

    def entry_catalog(self, label: str, kind: str, key: str, viewer: Any) -> Any:
        """Sync, queries: a catalog answering a get/read of one entry, or None (use the whole one)."""
        return catalog_pages.entry_catalog(label, kind, key, viewer)

    def record_fetch(self, served: Any, viewer: Any) -> None:
        fetches.record_fetch(served, viewer)

    def anonymous_viewer(self) -> Any:
        return Viewer()

    def cached_viewer(self, raw_token: str) -> tuple[bool, Any]:
        """(known, viewer-or-None) from the registry's in-memory token cache; no database."""
        return clients.cached_viewer(raw_token)

    def load_viewer(self, raw_token: str) -> Any:
        """Sync, queries the database. None for unknown, expired or revoked tokens."""
        return clients.load_viewer(raw_token)

    def viewer_by_name(self, name: str) -> Any:
        return clients.client_by_name(name)


source = RegistrySource()
