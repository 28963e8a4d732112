"""An admin save that nobody edited changes nothing: import -> open -> Save -> export gives the same file.

The POST is what a browser sends back for the form as rendered: every text box and text area with
the value it shows, text areas with CRLF line breaks (HTML turns each newline into CR LF on
submission) and single-line inputs without line breaks (a browser strips them from <input>).
What the registry stores is LF only (every write path normalises CR LF and lone CR to LF), and
exactly what was typed otherwise: no stripping of leading or trailing spaces or newlines.
"""

from __future__ import annotations

from typing import Any

import pytest
from django import forms
from django.urls import reverse

from registry.authoring.snapshots import snapshot_of
from registry.kinds import KINDS
from registry.models import AuditEntry
from registry.portable.importer import export_yaml, import_documents
from tests.factories import UNTRIMMED_YAML as DOC
from tests.factories import make_complete_entries

pytestmark = pytest.mark.django_db


def _browser_value(widget: forms.Widget, value: Any) -> str | None:
    """The string a browser posts for a widget showing `value` (None: nothing posted)."""
    if isinstance(widget, forms.CheckboxInput):
        return "on" if value else None
    if isinstance(widget, forms.FileInput):
        return None
    if isinstance(widget, forms.Select):
        return "" if value is None else str(value)
    shown = widget.format_value(value) or ""
    if isinstance(widget, forms.Textarea):
        return shown.replace("\r\n", "\n").replace("\n", "\r\n")
    if isinstance(widget, forms.TextInput):
        return shown.replace("\r", "").replace("\n", "")
    return shown


def _form_data(form: forms.BaseForm, data: dict[str, Any]) -> None:
    for bound in form:
        posted = _browser_value(bound.field.widget, bound.value())
        if posted is not None:
            data[bound.html_name] = posted


def browser_post(page) -> dict[str, Any]:
    """The POST body of Save on a change page, as a browser builds it from the rendered form."""
    data: dict[str, Any] = {"_save": "Save"}
    _form_data(page.context["adminform"].form, data)
    for inline in page.context["inline_admin_formsets"]:
        formset = inline.formset
        _form_data(formset.management_form, data)
        for form in formset.forms:
            _form_data(form, data)
    return data


def _save_unchanged(client, entry) -> Any:
    change = reverse(f"admin:registry_{entry._meta.model_name}_change", args=[entry.pk])
    response = client.post(change, browser_post(client.get(change)))
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response
    return response


def _entries():
    return [KINDS[kind].entry_model.objects.get(**{KINDS[kind].key_field: key}) for kind, key in (
        ("prompt", "spaced"), ("resource", "docs://trailing"), ("template", "items://{id}"))]


def test_an_unchanged_admin_save_of_imported_entries_changes_nothing_and_exports_the_same(client, editor, tmp_path):
    path = tmp_path / "doc.yaml"
    path.write_text(DOC, encoding="utf-8")
    import_documents(path, publish=False)
    exported = export_yaml()
    before = {(e.kind, e.pk): snapshot_of(e) for e in _entries()}
    edits = AuditEntry.objects.filter(action="edit").count()
    client.force_login(editor)
    for entry in _entries():
        _save_unchanged(client, entry)
    assert AuditEntry.objects.filter(action="edit").count() == edits  # no phantom "text changed"
    assert {(e.kind, e.pk): snapshot_of(e) for e in _entries()} == before
    assert export_yaml() == exported


def test_an_unchanged_admin_save_of_entries_with_every_field_set_changes_nothing(client, editor):
    entries = [entry for rows in make_complete_entries().values() for entry in rows]
    before = [snapshot_of(type(e).objects.get(pk=e.pk)) for e in entries]
    client.force_login(editor)
    for entry in entries:
        _save_unchanged(client, entry)
    assert not AuditEntry.objects.filter(action="edit").exists()
    assert [snapshot_of(type(e).objects.get(pk=e.pk)) for e in entries] == before


def test_text_typed_in_a_browser_is_stored_with_lf_and_as_typed(client, editor, tmp_path):
    path = tmp_path / "doc.yaml"
    path.write_text(DOC, encoding="utf-8")
    import_documents(path, publish=False)
    [_prompt, resource, _template] = _entries()
    client.force_login(editor)
    change = reverse("admin:registry_resource_change", args=[resource.pk])
    data = browser_post(client.get(change))
    data["text"] = "  First line\r\nSecond line\r\n\r\n"
    assert client.post(change, data).status_code == 302
    resource.refresh_from_db()
    assert resource.text == "  First line\nSecond line\n\n"
