"""The three kinds of registry entry and the models that make up each one's pipeline."""

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
    VersionedEntry,
)


@dataclass(frozen=True)
class EntryKind:
    name: str  # "prompt", "resource", "template"
    # The kind's concrete models. Any: their managers and fields (`objects`, `entry`, `version`) are
    # each concrete model's own, which neither type[Model] nor the abstract bases carry.
    entry_model: type[Any]
    version_model: type[Any]
    label_model: type[Any]
    key_field: str
    publish_permission: str
    list_kind: str  # which MCP list it belongs to: "prompts" or "resources"


KINDS: dict[str, EntryKind] = {
    "prompt": EntryKind("prompt", Prompt, PromptVersion, PromptLabel, "name", "registry.publish_prompt", "prompts"),
    "resource": EntryKind(
        "resource", Resource, ResourceVersion, ResourceLabel, "uri", "registry.publish_resource", "resources"
    ),
    "template": EntryKind(
        "template", ResourceTemplate, ResourceTemplateVersion, ResourceTemplateLabel, "uri_template",
        "registry.publish_resourcetemplate", "resources",
    ),
}


def kind_of(entry: VersionedEntry) -> EntryKind:
    return KINDS[entry.kind]
