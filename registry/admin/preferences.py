"""Each person's own preferences in the admin: the "Language" page in the user tools (their
language, which the e-mails speak too, and the kinds of e-mail they want).

Anyone signed in to the admin may change their own language (no model permission needed: it is
their own account); superusers also see everyone's rows under the registry's models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.admin.language import browser_language, save_language, saved_language, set_language_cookie
from registry.models import EditorPreference, MailKind

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


def language_choices() -> list[tuple[str, StrOrPromise]]:
    return [("", gettext_lazy("As my browser asks"))] + [(code, name) for code, name in settings.LANGUAGES]


class LanguageForm(forms.Form):
    language = forms.ChoiceField(
        label=gettext_lazy("Language"), required=False, choices=language_choices,
        help_text=gettext_lazy("The admin speaks this language to you on every device you sign in on, and so do "
                               "its e-mails."),
    )
    mail = forms.MultipleChoiceField(
        label=gettext_lazy("E-mail me about"), required=False, choices=MailKind.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text=gettext_lazy("Sent to the address of your account; untick what you do not want."),
    )


def mail_wanted(user: Any) -> list[str]:
    off = EditorPreference.objects.filter(user_id=user.pk).values_list("mail_off", flat=True).first() or []
    return [kind for kind in MailKind.values if kind not in off]


def language_view(request: HttpRequest) -> HttpResponse:
    """Show and change the signed-in user's own language; stored as their EditorPreference."""
    form = LanguageForm(request.POST or None, initial={"language": saved_language(request.user),
                                                       "mail": mail_wanted(request.user)})
    if request.method == "POST" and form.is_valid():
        code = save_language(request.user, form.cleaned_data["language"])
        wanted = set(form.cleaned_data["mail"])
        EditorPreference.objects.filter(user=request.user).update(  # type: ignore[misc]  # signed in: a saved user
            mail_off=[kind for kind in MailKind.values if kind not in wanted])
        active = code or browser_language(request)
        translation.activate(active)
        request.LANGUAGE_CODE = active
        messages.success(request, _("The admin now speaks %(language)s to you.")
                         % {"language": dict(settings.LANGUAGES).get(active, active)})
        target = request.POST.get("next") or ""
        if not url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
            target = reverse("admin:index")
        response = HttpResponseRedirect(target)
        set_language_cookie(response, code)
        request.registry_language_saved = True  # type: ignore[attr-defined]
        return response
    context = {
        **admin.site.each_context(request),
        "title": _("Your preferences"),
        "form": form,
        "email": getattr(request.user, "email", ""),
        "next": request.GET.get("next", ""),
    }
    return TemplateResponse(request, "admin/registry/language.html", context)


@admin.register(EditorPreference)
class EditorPreferenceAdmin(admin.ModelAdmin):
    """Everyone's saved preferences, for whoever holds the model permissions (superusers)."""

    list_display = ["user", "language", "mail_off", "updated_at"]
    list_filter = ["language"]
    search_fields = ["user__username"]
    autocomplete_fields = ["user"]

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "language":
            return forms.ChoiceField(label=db_field.verbose_name, choices=language_choices, required=False,
                                     help_text=db_field.help_text)
        if db_field.name == "mail_off":
            return forms.MultipleChoiceField(label=db_field.verbose_name, choices=MailKind.choices, required=False,
                                             widget=forms.CheckboxSelectMultiple, help_text=db_field.help_text)
        return super().formfield_for_dbfield(db_field, request, **kwargs)
