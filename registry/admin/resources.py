"""Resources (text or an uploaded file) and RFC 6570 resource templates, with previews."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from uritemplate import URITemplate

from registry.admin.document_preview import document_preview
from registry.admin.entries import VersionedEntryAdmin
from registry.admin.filters import KindFilter
from registry.admin.forms.resources import (
    ResourceForm,
    ResourceTemplateForm,
    TemplateVariableForm,
    TemplateVariableFormSet,
)
from registry.admin.thumbnails import stored_thumbnail
from registry.admin.views.preview_edits import Rows, named
from registry.authoring.composition import db_resolver
from registry.authoring.snapshots import (
    Payloads,
    draft_loader,
    materialise,
    resource_content,
    snapshot_resource,
    snapshot_template,
)
from registry.errors import ContentMissing, RegistryError
from registry.formats.references import ExpansionError, expand
from registry.formats.rendering import render_body
from registry.formats.uris import UriTemplateMatcher, validate_uri
from registry.models import PRODUCTION, Resource, ResourceTemplate, TemplateVariable

TEXT_PREVIEW_CHARS = 2000


@admin.register(Resource)
class ResourceAdmin(VersionedEntryAdmin):
    form = ResourceForm
    key_field = "uri"
    preview_template = "admin/registry/resource/preview.html"
    preview_panel_template = "admin/registry/resource/_preview_panel.html"
    list_display = ["uri", "name", "folder", "mime_type", "production_version", "updated_at"]
    list_filter = [*VersionedEntryAdmin.list_filter, KindFilter]
    search_fields = ["uri", "name", "title", "description", "tags"]
    readonly_fields = ["published_versions", "content_preview"]
    fieldsets = [
        (None, {"fields": ["uri", "name", "title", "description", "folder", "tags", "published_versions",
                           "draft_revision"]}),
        (gettext_lazy("Content"), {
            "fields": ["mime_type", "text", ("upload", "clear_file"), "content_preview"],
            "description": gettext_lazy("Type the text, or upload a file for binary content; not both."),
        }),
        (gettext_lazy("Hints for clients"), {"fields": ["audience", "priority"], "classes": ["collapse"]}),
    ]

    @admin.display(description=gettext_lazy("Current content"))
    def content_preview(self, obj: Resource) -> str:
        if obj is None or obj.pk is None:
            return "—"
        if obj.data_sha256:
            return stored_thumbnail(obj)
        text = obj.text[:TEXT_PREVIEW_CHARS] + ("…" if len(obj.text) > TEXT_PREVIEW_CHARS else "")
        return format_html('<pre style="white-space:pre-wrap;max-height:20em;overflow:auto">{}</pre>', text)

    def posted_snapshot(self, new_object: Resource, rows: Rows, payloads: Payloads) -> dict[str, Any]:
        return snapshot_resource(new_object, payloads)

    def preview_of(self, data: Any, snapshot: dict[str, Any], payloads: Payloads) -> dict[str, Any]:
        """The document as a client reads it from production (its snippets expanded there)."""
        try:
            item = materialise(resource_content(snapshot), draft_loader(payloads))
            if snapshot.get("includes") and isinstance(item.get("text"), str):  # as production clients get it
                item["text"] = expand(item["text"], db_resolver(PRODUCTION))
        except ContentMissing as exc:
            return {"error": exc.message}
        except ExpansionError as exc:
            return {"error": str(exc)}
        return document_preview(item)


class TemplateVariableInline(admin.TabularInline):
    model = TemplateVariable
    form = TemplateVariableForm
    formset = TemplateVariableFormSet
    extra = 0


class TemplatePreviewForm(forms.Form):
    uri = forms.CharField(
        label=gettext_lazy("A concrete URI"), required=False, widget=forms.TextInput(attrs={"size": 80}),
        help_text=gettext_lazy("Type a URI a client would read, or fill in the variables below instead."),
    )

    def __init__(self, *args: Any, variables: list[str], suggestions: dict[str, list[str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in variables:
            options = suggestions.get(name, [])
            self.fields[f"var_{name}"] = forms.CharField(
                label=name, required=False, initial=options[0] if options else "",
                help_text=(_("Suggestions: %(values)s") % {"values": ", ".join(options)}) if options else "",
            )


@admin.register(ResourceTemplate)
class ResourceTemplateAdmin(VersionedEntryAdmin):
    form = ResourceTemplateForm
    inlines = [TemplateVariableInline]
    key_field = "uri_template"
    preview_template = "admin/registry/resourcetemplate/preview.html"
    preview_panel_template = "admin/registry/resourcetemplate/_preview_panel.html"
    list_display = ["uri_template", "name", "folder", "mime_type", "production_version", "updated_at"]
    search_fields = ["uri_template", "name", "title", "description", "tags"]
    fieldsets = [
        (None, {"fields": ["uri_template", "name", "title", "description", "folder", "tags", "published_versions",
                           "draft_revision"]}),
        (gettext_lazy("Content"), {"fields": ["mime_type", "body"]}),
        (gettext_lazy("Hints for clients"), {"fields": ["audience", "priority"], "classes": ["collapse"]}),
    ]

    def posted_snapshot(self, new_object: ResourceTemplate, rows: Rows, payloads: Payloads) -> dict[str, Any]:
        return snapshot_template(new_object, variables=named(rows.get("variables", [])))

    def preview_of(self, data: Any, snapshot: dict[str, Any], payloads: Payloads) -> dict[str, Any]:
        """What a client reading one URI of the template gets from production: the URI typed, or
        the one the variable values (`data`; None: the first suggestions) make."""
        context: dict[str, Any] = {}
        try:
            matcher = UriTemplateMatcher.build(snapshot["uriTemplate"])
            names = [name for _group, name in matcher.groups]
        except RegistryError as exc:
            context["error"] = exc.message
            return context
        suggestions = {v["name"]: v.get("suggestions", []) for v in snapshot.get("variables", [])}
        form = TemplatePreviewForm(data, variables=list(dict.fromkeys(names)), suggestions=suggestions)
        context["form"] = form
        if form.is_bound:
            values_given = form.cleaned_data if form.is_valid() else {}
        else:
            values_given = {name: field.initial for name, field in form.fields.items()}
        uri = (values_given.get("uri") or "").strip()
        try:
            if uri:
                validate_uri(uri)
                values = matcher.match(uri)
                if values is None:
                    context["error"] = _("The URI %(uri)s does not match the template %(template)s.") % {
                        "uri": uri, "template": snapshot["uriTemplate"]}
                    return context
            else:
                given = {k[4:]: v for k, v in values_given.items() if k.startswith("var_") and v}
                missing = [name for name in dict.fromkeys(names) if name not in given]
                if missing:
                    context["error"] = _("Type a URI, or fill in every variable to see what a client would read: "
                                         "%(names)s is empty.") % {"names": ", ".join(missing)}
                    return context
                uri = URITemplate(snapshot["uriTemplate"]).expand(given)
                # Read it back the way the server does, so the preview shows what clients really get.
                values = matcher.match(uri)
                if values is None:
                    context["error"] = (_("The values make the URI %(uri)s, which the server would not match.")
                                        % {"uri": uri})
                    return context
            content: dict[str, Any] = {"uri": uri}
            if snapshot.get("mimeType"):
                content["mimeType"] = snapshot["mimeType"]
            body = snapshot.get("body", "")
            if snapshot.get("includes"):  # the snippets as production clients would get them
                body = expand(body, db_resolver(PRODUCTION))
            content["text"] = render_body(body, values)
        except RegistryError as exc:
            context["error"] = exc.message
            return context
        except ExpansionError as exc:
            context["error"] = str(exc)
            return context
        context.update(uri=uri, values=values, **document_preview(content))
        return context
