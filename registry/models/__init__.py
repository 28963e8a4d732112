"""Registry models; see each module for one concept."""

from registry.models.audit import AuditAction, AuditEntry, ChangeLogEntry
from registry.models.base import PRODUCTION, STAGING, EntryVersion, ReleaseLabel, VersionedEntry
from registry.models.clients import FetchCounter, McpClient
from registry.models.preferences import EditorPreference
from registry.models.prompts import (
    ArgumentType,
    ContentKind,
    MessageRole,
    Prompt,
    PromptArgument,
    PromptLabel,
    PromptMessage,
    PromptVersion,
)
from registry.models.resources import (
    Audience,
    Resource,
    ResourceLabel,
    ResourceTemplate,
    ResourceTemplateLabel,
    ResourceTemplateVersion,
    ResourceVersion,
    TemplateVariable,
)
from registry.models.reviews import ReviewRequest, ReviewStatus, Rollout
from registry.storage.objects import ContentObject

__all__ = [
    "PRODUCTION",
    "STAGING",
    "ArgumentType",
    "Audience",
    "AuditAction",
    "AuditEntry",
    "ChangeLogEntry",
    "ContentKind",
    "ContentObject",
    "EditorPreference",
    "EntryVersion",
    "FetchCounter",
    "McpClient",
    "MessageRole",
    "Prompt",
    "PromptArgument",
    "PromptLabel",
    "PromptMessage",
    "PromptVersion",
    "ReleaseLabel",
    "Resource",
    "ResourceLabel",
    "ResourceTemplate",
    "ResourceTemplateLabel",
    "ResourceTemplateVersion",
    "ResourceVersion",
    "ReviewRequest",
    "ReviewStatus",
    "Rollout",
    "TemplateVariable",
    "VersionedEntry",
]
