"""The four kinds of registry entry and the models that make up each one's pipeline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from registry.models import (
    Prompt,
    PromptLabel,
    PromptVersion,
    Resource,
    ResourceLabel,
    ResourceTemplate,
    ResourceTemplateLabel,
    ResourceTemplateVersion,
    ResourceVersion,
    Snippet,
    SnippetLabel,
    SnippetVersion,
    VersionedEntry,
)


@dataclass(frozen=True)
class EntryKind:
    name: str  # "prompt", "resource", "template", "snippet"
    # The kind's concrete models. Any: their managers and fields (`objects`, `entry`, `version`) are
    # each concrete model's own, which neither type[Model] nor the abstract bases carry.
    entry_model: type[Any]
    version_model: type[Any]
    label_model: type[Any]
    key_field: str
    publish_permission: str
    list_kind: str  # which MCP list it belongs to: "prompts" or "resources" ("" for snippets: none)


KINDS: dict[str, EntryKind] = {
    "prompt": EntryKind("prompt", Prompt, PromptVersion, PromptLabel, "name", "registry.publish_prompt", "prompts"),
    "resource": EntryKind(
        "resource", Resource, ResourceVersion, ResourceLabel, "uri", "registry.publish_resource", "resources"
    ),
    "template": EntryKind(
        "template", ResourceTemplate, ResourceTemplateVersion, ResourceTemplateLabel, "uri_template",
        "registry.publish_resourcetemplate", "resources",
    ),
    # Served to no client on its own: what it changes is the text of the entries that include it.
    "snippet": EntryKind(
        "snippet", Snippet, SnippetVersion, SnippetLabel, "name", "registry.publish_snippet", "",
    ),
}
SERVED_KINDS = ("prompt", "resource", "template")  # the kinds MCP clients list and read


def kind_name(kind: str) -> Any:
    """'template' -> the model's verbose name in the reader's language ('Ressourcen-Vorlage'), for
    pages that show a row's stored kind code; an unknown kind as given."""
    entry_kind = KINDS.get(kind)
    return entry_kind.entry_model._meta.verbose_name if entry_kind is not None else kind


def kind_of(entry: VersionedEntry) -> EntryKind:
    return KINDS[entry.kind]
