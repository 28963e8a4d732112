"""What each person chose for themselves in the admin: the language it speaks to them in (in its
e-mails too), and which kinds of e-mail they want."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class EditorPreference(models.Model):
    """One row per user who changed a preference; no row means the defaults (the browser's language).

    The language is one of settings.LANGUAGES (checked by the form, not by a database constraint,
    so adding a language needs no migration); "" means "as my browser asks" (e-mail then speaks
    LANGUAGE_CODE). `mail_off` lists the kinds of e-mail turned off, so a new kind is on for
    everyone without a migration.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="editor_preference",
                                verbose_name=_("user"))
    language = models.CharField(_("language"), max_length=15, blank=True,
                                help_text=_("The admin's language for you; empty: the language your browser asks for."))
    mail_off = models.JSONField(
        _("e-mail turned off"), default=list, blank=True,
        help_text=_("The kinds of e-mail this person does not want (registry.models.mail.MailKind values)."),
    )
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("editor preference")
        verbose_name_plural = _("editor preferences")

    def __str__(self) -> str:
        return f"{self.user} ({self.language or '-'})"
