"""Prompt drafts with their arguments and messages, and the prompt preview."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.admin.entries import VersionedEntryAdmin
from registry.admin.filters import KindFilter
from registry.admin.forms.prompts import (
    PromptArgumentForm,
    PromptArgumentFormSet,
    PromptForm,
    PromptMessageForm,
    PromptMessageFormSet,
)
from registry.admin.thumbnails import stored_thumbnail
from registry.admin.views.preview_edits import Rows, named
from registry.authoring.composition import db_resolver, expand_snapshot
from registry.authoring.snapshots import Payloads, draft_loader, materialise_block, snapshot_prompt
from registry.authoring.validation import registry_resource_exists
from registry.errors import ArgumentErrors, MissingArguments, RegistryError
from registry.formats import argtypes
from registry.formats.references import ExpansionError
from registry.formats.rendering import render_prompt
from registry.models import PRODUCTION, Prompt, PromptArgument, PromptMessage


class OneBasedPositionInline(admin.StackedInline):
    """Readers (view permission only) see a row's Position as editors do, 1 for the first (the
    form's field is 1-based); the admin's read-only display would show the stored 0."""

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        fieldsets: list[Any] = list(super().get_fieldsets(request, obj))
        if self.has_change_permission(request, obj):
            return fieldsets
        swap: dict[Any, Any] = {"position": "shown_position"}
        return [(name, {**options, "fields": [tuple(swap.get(f, f) for f in line) if isinstance(line, tuple)
                                              else swap.get(line, line) for line in options["fields"]]})
                for name, options in fieldsets]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*super().get_readonly_fields(request, obj), "shown_position"]

    @admin.display(description=gettext_lazy("Position"))
    def shown_position(self, row: PromptArgument | PromptMessage) -> int:
        return (row.position or 0) + 1


class PromptArgumentInline(OneBasedPositionInline):
    """Stacked, not a table: an argument has fourteen fields, and a row of fourteen columns is
    wider than any window, so an editor would have to scroll sideways to find "required"."""

    model = PromptArgument
    form = PromptArgumentForm
    formset = PromptArgumentFormSet
    extra = 0
    ordering = ["position", "id"]
    fieldsets = [
        (None, {"fields": [("position", "name", "required"), "title", "description", ("default", "suggestions")]}),
        # argument_types.js shows only the lines of limits that apply to the chosen type, so the
        # fields sharing a line apply to the same types.
        (gettext_lazy("Type and limits"), {
            "fields": ["type", "choices", ("min_length", "max_length"), "pattern", ("minimum", "maximum")],
        }),
    ]


class PromptMessageInline(OneBasedPositionInline):
    model = PromptMessage
    form = PromptMessageForm
    formset = PromptMessageFormSet
    extra = 0
    ordering = ["position", "id"]
    readonly_fields = ["current_file"]
    autocomplete_fields = ["resource"]
    fieldsets = [
        (None, {"fields": [("position", "role", "kind"), "text"]}),
        # The classes let change_form.js show only the fieldsets of the chosen content kind.
        (gettext_lazy("Image, audio or file"), {
            "classes": ["registry-kind-file"],
            "fields": [("upload", "clear_file"), "mime_type", "current_file"],
            "description": gettext_lazy("For image and audio messages, and embedded resources given as a file."),
        }),
        (gettext_lazy("Embedded resource or resource link"), {
            "classes": ["registry-kind-uri"],
            "fields": ["uri", "resource", "link_name"],
            "description": gettext_lazy("Give a URI (it may use {{ argument }} placeholders) or choose a registry "
                                        "resource. For an embedded resource given inline, type its text in the Text "
                                        "box above."),
        }),
    ]

    @admin.display(description=gettext_lazy("Current file"))
    def current_file(self, obj: PromptMessage) -> str:
        return stored_thumbnail(obj) if obj and obj.pk else "—"


class PreviewArgumentsForm(forms.Form):
    """One input per declared argument, fitting its type, prefilled with its default or first suggestion.

    Enums get a select, booleans a checkbox, numbers a number box; everything is handed to the
    renderer as the string an MCP client would send, so the preview checks values exactly as
    `prompts/get` does.
    """

    def __init__(self, *args: Any, arguments: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arguments = arguments
        for arg in arguments:
            self.fields[arg["name"]] = self._field(arg)

    @staticmethod
    def _field(arg: dict[str, Any]) -> forms.Field:
        suggestions = arg.get("suggestions") or []
        kind = argtypes.type_of(arg)
        help_parts = [argtypes.listed_description(arg)]
        if suggestions and kind not in (argtypes.ENUM, argtypes.BOOLEAN):
            help_parts.append(_("Suggestions: %(values)s") % {"values": ", ".join(suggestions)})
        common = {
            "label": arg.get("title") or arg["name"],
            "required": False,
            "help_text": " ".join(p for p in help_parts if p) + ("" if arg.get("required") else " " + _("(optional)")),
        }
        initial = arg.get("default") or (suggestions[0] if suggestions else "")
        if kind == argtypes.ENUM:
            choices = [(c, c) for c in arg.get("choices") or ()]
            return forms.ChoiceField(choices=[("", "—"), *choices], initial=initial, **common)
        if kind == argtypes.BOOLEAN:
            return forms.BooleanField(initial=initial == "true", **common)
        if kind in (argtypes.INTEGER, argtypes.NUMBER):
            attrs: dict[str, Any] = {"step": "1" if kind == argtypes.INTEGER else "any"}
            for key, attr in (("minimum", "min"), ("maximum", "max")):
                if arg.get(key) is not None:
                    attrs[attr] = argtypes.number_text(arg[key])
            return forms.CharField(initial=initial, widget=forms.NumberInput(attrs=attrs), **common)
        if kind in (argtypes.STRING, argtypes.RESOURCE):
            attrs = {"size": 60}
            if arg.get("maxLength") is not None:
                attrs["maxlength"] = arg["maxLength"]
            return forms.CharField(initial=initial, strip=False, widget=forms.TextInput(attrs=attrs), **common)
        return forms.CharField(initial=initial, strip=False,
                               widget=forms.Textarea(attrs={"rows": 2, "cols": 60}), **common)

    def values(self) -> dict[str, str]:
        """The filled-in values as MCP strings (bound form) or the initial ones (first visit)."""
        out: dict[str, str] = {}
        for name, field in self.fields.items():
            if not self.is_bound:
                value = field.initial
            elif self.is_valid():
                value = self.cleaned_data.get(name)
            else:
                value = None
            if isinstance(field, forms.BooleanField):
                out[name] = "true" if value else "false"
            elif value:
                out[name] = str(value)
        return out


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
    preview_panel_template = "admin/registry/prompt/_preview_panel.html"
    list_display = ["name", "title", "folder", "production_version", "updated_at"]
    list_filter = [*VersionedEntryAdmin.list_filter, KindFilter]
    search_fields = ["name", "title", "description", "tags"]
    fieldsets = [
        (None, {"fields": ["name", "title", "description", "folder", "tags", "published_versions",
                           "draft_revision"]}),
    ]

    def _create_formsets(self, request, obj, change):
        # The message inline checks placeholders against the arguments being saved alongside.
        formsets, inline_instances = super()._create_formsets(  # type: ignore[misc]  # private, no stub
            request, obj, change)
        arguments = next((f for f in formsets if isinstance(f, PromptArgumentFormSet)), None)
        for formset in formsets:
            if isinstance(formset, PromptMessageFormSet):
                formset.argument_formset = arguments
        return formsets, inline_instances

    def posted_snapshot(self, new_object: Prompt, rows: Rows, payloads: Payloads) -> dict[str, Any]:
        return snapshot_prompt(new_object, payloads, arguments=named(rows.get("arguments", [])),
                               messages=rows.get("messages", []))

    def preview_of(self, data: Any, snapshot: dict[str, Any], payloads: Payloads) -> dict[str, Any]:
        return preview_result(snapshot, payloads, data)


def preview_result(snapshot: dict[str, Any], payloads: Payloads, data: Any) -> dict[str, Any]:
    """Sample-argument boxes plus the rendering of `snapshot` with them (`data` None: the defaults).

    `payloads` holds the draft's own unpublished bytes; anything else comes from the content store."""
    # Prefixed, so an argument called e.g. "preview" cannot collide with the page's own parameters.
    form = PreviewArgumentsForm(data, prefix="arg", arguments=snapshot.get("arguments", []))
    values = form.values()
    context: dict[str, Any] = {"form": form, "values": values}
    try:
        load = draft_loader(payloads)
        if snapshot.get("includes"):  # the snippets as production clients would get them
            snapshot = expand_snapshot("prompt", snapshot, db_resolver(PRODUCTION), load)
        result = render_prompt(snapshot, values, lambda block: materialise_block(block, load),
                               registry_resource_exists)
    except MissingArguments as exc:
        message = _("Fill in the required argument(s): %(names)s.") % {"names": ", ".join(exc.names)}
        # Before the first "Render preview" that is an invitation, not a mistake.
        context["error" if form.is_bound else "hint"] = message
    except ArgumentErrors as exc:
        for problem in exc.invalid:
            if problem["name"] in form.fields and form.is_bound:
                form.add_error(problem["name"], _("This value %(reason)s.") % {"reason": problem["reason"]})
        context["error"] = exc.message
    except RegistryError as exc:
        context["error"] = exc.message
    except ExpansionError as exc:
        context["error"] = str(exc)
    else:
        context["result_json"] = json.dumps(result, indent=2, ensure_ascii=False)
        context["transcript"] = transcript(result)
    return context
