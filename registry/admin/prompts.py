"""Prompt drafts with their arguments and messages, and the prompt preview."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin

from registry.admin.common import VersionedEntryAdmin, stored_thumbnail
from registry.errors import MissingArguments, RegistryError
from registry.forms import (
    PromptArgumentForm,
    PromptArgumentFormSet,
    PromptForm,
    PromptMessageForm,
    PromptMessageFormSet,
)
from registry.models import Prompt, PromptArgument, PromptMessage
from registry.rendering import render_prompt
from registry.snapshots import Payloads, draft_loader, materialise_block, snapshot_of


class PromptArgumentInline(admin.TabularInline):
    model = PromptArgument
    form = PromptArgumentForm
    formset = PromptArgumentFormSet
    extra = 0
    ordering = ["position", "id"]


class PromptMessageInline(admin.StackedInline):
    model = PromptMessage
    form = PromptMessageForm
    formset = PromptMessageFormSet
    extra = 0
    ordering = ["position", "id"]
    readonly_fields = ["current_file"]
    autocomplete_fields = ["resource"]
    fieldsets = [
        (None, {"fields": [("position", "role", "kind"), "text"]}),
        ("Image, audio or file", {
            "fields": [("upload", "clear_file"), "mime_type", "current_file"],
            "description": "For image and audio messages, and embedded resources given as a file.",
        }),
        ("Embedded resource or resource link", {
            "fields": ["uri", "resource", "link_name"],
            "description": "Give a URI (it may use {{ argument }} placeholders) or choose a registry resource. "
            "For an embedded resource given inline, type its text in the Text box above.",
        }),
    ]

    @admin.display(description="Current file")
    def current_file(self, obj: PromptMessage) -> str:
        return stored_thumbnail(obj) if obj and obj.pk else "—"


class PreviewArgumentsForm(forms.Form):
    """One box per declared argument, prefilled with its default or first suggestion."""

    def __init__(self, *args: Any, arguments: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for arg in arguments:
            suggestions = arg.get("suggestions") or []
            help_parts = [arg.get("description", "")]
            if suggestions:
                help_parts.append("Suggestions: " + ", ".join(suggestions))
            self.fields[arg["name"]] = forms.CharField(
                label=arg.get("title") or arg["name"],
                required=False,
                initial=arg.get("default") or (suggestions[0] if suggestions else ""),
                help_text=" ".join(p for p in help_parts if p) + ("" if arg.get("required") else " (optional)"),
                widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
            )


def transcript(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The rendered messages as rows a person can read."""
    rows = []
    for message in result.get("messages", []):
        block = message["content"]
        row: dict[str, Any] = {"role": message["role"], "type": block["type"]}
        if block["type"] == "text":
            row["text"] = block["text"]
        elif block["type"] in ("image", "audio"):
            row["src"] = f"data:{block.get('mimeType', '')};base64,{block.get('data', '')}"
            row["mime_type"] = block.get("mimeType", "")
        elif block["type"] == "resource":
            resource = block["resource"]
            row["uri"] = resource.get("uri", "")
            row["text"] = resource.get("text", "")
            row["mime_type"] = resource.get("mimeType", "")
            if "blob" in resource:
                row["src"] = f"data:{resource.get('mimeType', '')};base64,{resource['blob']}"
        else:
            row["uri"] = block.get("uri", "")
            row["text"] = block.get("name", "")
        rows.append(row)
    return rows


@admin.register(Prompt)
class PromptAdmin(VersionedEntryAdmin):
    form = PromptForm
    inlines = [PromptArgumentInline, PromptMessageInline]
    key_field = "name"
    preview_template = "admin/registry/prompt/preview.html"
    list_display = ["name", "title", "production_version", "updated_at"]
    search_fields = ["name", "title", "description", "tags"]
    fieldsets = [
        (None, {"fields": ["name", "title", "description", "tags", "published_versions", "draft_revision"]}),
    ]

    def _create_formsets(self, request, obj, change):
        # The message inline checks placeholders against the arguments being saved alongside.
        formsets, inline_instances = super()._create_formsets(request, obj, change)
        arguments = next((f for f in formsets if isinstance(f, PromptArgumentFormSet)), None)
        for formset in formsets:
            if isinstance(formset, PromptMessageFormSet):
                formset.argument_formset = arguments
        return formsets, inline_instances

    def preview_context(self, request, obj: Prompt) -> dict[str, Any]:
        payloads: Payloads = {}
        snapshot = snapshot_of(obj, payloads)
        # Prefixed, so an argument called e.g. "preview" cannot collide with the page's own parameters.
        form = PreviewArgumentsForm(request.GET if "preview" in request.GET else None, prefix="arg",
                                    arguments=snapshot.get("arguments", []))
        if form.is_bound:
            values = {k: v for k, v in form.cleaned_data.items() if v} if form.is_valid() else {}
        else:
            values = {name: field.initial for name, field in form.fields.items() if field.initial}
        context: dict[str, Any] = {"form": form, "values": values}
        try:
            load = draft_loader(payloads)
            result = render_prompt(snapshot, values, lambda block: materialise_block(block, load))
        except MissingArguments as exc:
            message = "Fill in the required argument(s): " + ", ".join(exc.names) + "."
            # Before the first "Render preview" that is an invitation, not a mistake.
            context["error" if form.is_bound else "hint"] = message
        except RegistryError as exc:
            context["error"] = exc.message
        else:
            context["result_json"] = json.dumps(result, indent=2, ensure_ascii=False)
            context["transcript"] = transcript(result)
        return context

