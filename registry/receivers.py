"""Model-signal receivers for changes made outside the services (shell, bulk scripts).

Services record their own changes; these catch label and entry deletions, which no service
performs, so clients still hear that something they could see is gone.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete

from registry.changes import record_change
from registry.models import Prompt, PromptLabel, Resource, ResourceLabel, ResourceTemplate, ResourceTemplateLabel


def label_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    entry = instance.entry
    record_change(kind=entry.kind, key=entry.key, label=instance.name, list_changed=True)


def entry_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    record_change(kind=instance.kind, key=instance.key, list_changed=True)


def connect() -> None:
    for model in (PromptLabel, ResourceLabel, ResourceTemplateLabel):
        post_delete.connect(label_deleted, sender=model, dispatch_uid=f"registry.label_deleted.{model.__name__}")
    for model in (Prompt, Resource, ResourceTemplate):
        post_delete.connect(entry_deleted, sender=model, dispatch_uid=f"registry.entry_deleted.{model.__name__}")
