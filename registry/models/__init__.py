"""Registry models; see each module for one concept."""

from registry.models.audit import AuditAction, AuditEntry, ChangeLogEntry
from registry.models.base import PRODUCTION, STAGING, EntryVersion, ReleaseLabel, VersionedEntry
from registry.models.clients import FetchCounter, McpClient
from registry.models.discussion import CommentKind, ReviewComment
from registry.models.imports import ImportedFile
from registry.models.mail import MailKind, MailMessage, MailStatus
from registry.models.ownership import FolderOwner
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
from registry.models.reviews import OPEN_STATUSES, ReviewRequest, ReviewStatus, Rollout
from registry.models.schedules import ScheduledRelease, ScheduleStatus
from registry.models.snippets import EntryUse, Snippet, SnippetArgument, SnippetLabel, SnippetVersion
from registry.storage.objects import ContentObject

__all__ = [
    "OPEN_STATUSES",
    "PRODUCTION",
    "STAGING",
    "ArgumentType",
    "Audience",
    "AuditAction",
    "AuditEntry",
    "ChangeLogEntry",
    "CommentKind",
    "ContentKind",
    "ContentObject",
    "EditorPreference",
    "EntryUse",
    "EntryVersion",
    "FetchCounter",
    "FolderOwner",
    "ImportedFile",
    "MailKind",
    "MailMessage",
    "MailStatus",
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
    "ReviewComment",
    "ReviewRequest",
    "ReviewStatus",
    "Rollout",
    "ScheduleStatus",
    "ScheduledRelease",
    "Snippet",
    "SnippetArgument",
    "SnippetLabel",
    "SnippetVersion",
    "TemplateVariable",
    "VersionedEntry",
]
