"""The base of an entry's edit form, and what its inline formsets share.

EntryForm keeps a draft from being silently overwritten (the revision it was opened at);
`live_forms` says which inline rows will exist after a save, for the formsets' checks that
span rows and for the admin's preview of unsaved edits.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.admin.forms.fields import NewlinesMixin


class DraftRevisionMixin:
    """Optimistic concurrency for people: the form remembers the draft revision it was opened at.

    The admin locks and re-reads the row before validating a POST (VersionedEntryAdmin.get_object),
    so `instance.revision` is the current one; a save based on an older revision is refused with
    who changed it and when, and the editor's own edits stay in the re-displayed form. The hidden
    field then carries the current revision, so saving again, having seen the warning, is a
    deliberate replacement rather than a silent one.
    """

    instance: Any
    data: Any

    def _init_revision(self) -> None:
        if self.instance.pk is not None:
            self.fields["draft_revision"].initial = self.instance.revision  # type: ignore[attr-defined]

    def check_revision(self) -> None:
        from registry.authoring.drafts import conflict_message

        expected = self.cleaned_data.get("draft_revision")  # type: ignore[attr-defined]
        if self.instance.pk is None or expected is None or expected == self.instance.revision:
            return
        self.add_error(None, ValidationError(  # type: ignore[attr-defined]
            conflict_message(self.instance, expected) + " " + _("Your edits are still in the form below: copy what "
            "you need and reload, or save again to replace their version with yours."), code="draft_conflict"))
        self.data = self.data.copy()
        self.data[self.add_prefix("draft_revision")] = str(self.instance.revision)  # type: ignore[attr-defined]


class EntryForm(NewlinesMixin, DraftRevisionMixin, forms.ModelForm):
    draft_revision = forms.IntegerField(label=gettext_lazy("Draft revision"), widget=forms.HiddenInput, required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_revision()

    registry_user: Any = None  # who saves: set by VersionedEntryAdmin.get_form, for team ownership

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        self.check_revision()
        self.check_folder_owner(cleaned)
        return cleaned

    def check_folder_owner(self, cleaned: dict[str, Any]) -> None:
        """Refuse, in the form, a draft the user may not change where it is or where it would go
        (registry.roles.folder_refusal; the save path checks the same rule again), and audit the
        refusal: an invalid form saves nothing, so the admin's transaction commits the row."""
        from registry import roles
        from registry.formats.folders import normalise_folder
        from registry.refusals import record_refusal, unsaved

        if self.registry_user is None:
            return
        after = normalise_folder(cleaned.get("folder", self.instance.folder))
        before = self.instance.folder if self.instance.pk else None
        attempted = "create" if before is None else "move" if before != after else "edit"
        entry = self.instance if self.instance.pk else unsaved(self.instance.kind, cleaned)
        refusal = roles.folder_refusal(self.registry_user, [*([before] if before is not None else []), after],
                                       entry=entry, attempted=attempted)
        if refusal is not None:
            record_refusal(refusal)
            self.add_error("folder" if "folder" in self.fields else None,
                           ValidationError(refusal.message, code="folder_owner"))



def live_forms(formset: BaseInlineFormSet) -> list[forms.ModelForm]:
    """Forms that will exist after saving: valid, filled in and not marked for deletion."""
    live = []
    for form in formset.forms:
        if not hasattr(form, "cleaned_data") or not form.cleaned_data:
            continue
        if formset.can_delete and formset._should_delete_form(form):  # type: ignore[attr-defined]  # private, no stub
            continue
        live.append(form)
    return live
