"""Model field labels in the reader's language, without a schema migration.

Most fields of the registry's models (and of webhooks and oauth) have no verbose_name: Django
makes one from the field name ("updated at"), in English, for change-list columns, detail pages
and forms. Giving each an explicit translatable verbose_name would rewrite every field in a
migration; instead, at start-up, each such automatic name is replaced by the same words marked
for translation. The migration state still sees no verbose_name (Field.deconstruct reads the
argument the field was declared with), so `makemigrations` finds nothing to do.
"""

from __future__ import annotations

from typing import Iterable

from django.apps import AppConfig
from django.utils.translation import gettext_lazy, gettext_noop

# Every automatic field name of the apps below, so makemessages puts them in the catalogs.
AUTOMATIC_LABELS = frozenset([
    gettext_noop("action"),
    gettext_noop("active"),
    gettext_noop("actor"),
    gettext_noop("actor name"),
    gettext_noop("application"),
    gettext_noop("archived at"),
    gettext_noop("attempts"),
    gettext_noop("audience"),
    gettext_noop("author"),
    gettext_noop("author name"),
    gettext_noop("authority"),
    gettext_noop("base version"),
    gettext_noop("body"),
    gettext_noop("candidate version"),
    gettext_noop("change note"),
    gettext_noop("changes"),
    gettext_noop("choices"),
    gettext_noop("client"),
    gettext_noop("client name"),
    gettext_noop("content hash"),
    gettext_noop("count"),
    gettext_noop("created at"),
    gettext_noop("created by"),
    gettext_noop("data sha256"),
    gettext_noop("data size"),
    gettext_noop("decided at"),
    gettext_noop("decided by"),
    gettext_noop("decided by name"),
    gettext_noop("decision comment"),
    gettext_noop("default"),
    gettext_noop("delivered at"),
    gettext_noop("delivery id"),
    gettext_noop("description"),
    gettext_noop("entry"),
    gettext_noop("entry id"),
    gettext_noop("entry key"),
    gettext_noop("entry kind"),
    gettext_noop("event"),
    gettext_noop("events"),
    gettext_noop("expires at"),
    gettext_noop("first at"),
    gettext_noop("from version"),
    gettext_noop("group"),
    gettext_noop("kind"),
    gettext_noop("label"),
    gettext_noop("last at"),
    gettext_noop("last attempt at"),
    gettext_noop("last error"),
    gettext_noop("last seen at"),
    gettext_noop("last status code"),
    gettext_noop("lease token"),
    gettext_noop("leased until"),
    gettext_noop("link name"),
    gettext_noop("list changed"),
    gettext_noop("listing"),
    gettext_noop("max length"),
    gettext_noop("maximum"),
    gettext_noop("mime type"),
    gettext_noop("min length"),
    gettext_noop("minimum"),
    gettext_noop("moved at"),
    gettext_noop("moved by"),
    gettext_noop("name"),
    gettext_noop("next attempt at"),
    gettext_noop("note"),
    gettext_noop("number"),
    gettext_noop("parent"),
    gettext_noop("pattern"),
    gettext_noop("payload"),
    gettext_noop("percent"),
    gettext_noop("position"),
    gettext_noop("priority"),
    gettext_noop("prompt"),
    gettext_noop("protected"),
    gettext_noop("requested by"),
    gettext_noop("requested by name"),
    gettext_noop("required"),
    gettext_noop("resource"),
    gettext_noop("result version"),
    gettext_noop("revision"),
    gettext_noop("role"),
    gettext_noop("scope tags"),
    gettext_noop("secret"),
    gettext_noop("sha256"),
    gettext_noop("size"),
    gettext_noop("snapshot"),
    gettext_noop("started at"),
    gettext_noop("status"),
    gettext_noop("suggestions"),
    gettext_noop("tags"),
    gettext_noop("template"),
    gettext_noop("text"),
    gettext_noop("title"),
    gettext_noop("to version"),
    gettext_noop("token hash"),
    gettext_noop("token prefix"),
    gettext_noop("type"),
    gettext_noop("updated at"),
    gettext_noop("updated by"),
    gettext_noop("updated by name"),
    gettext_noop("uri"),
    gettext_noop("uri template"),
    gettext_noop("url"),
    gettext_noop("user"),
    gettext_noop("version"),
    gettext_noop("version number"),
    gettext_noop("webhook"),
])
APPS = ("registry", "webhooks", "oauth")


def translate_automatic_labels(configs: Iterable[AppConfig]) -> None:
    """Swap each automatic English field name listed above for its lazily translated twin."""
    for config in configs:
        for model in config.get_models():
            for field in model._meta.get_fields():
                if getattr(field, "_verbose_name", "") is None and str(field.verbose_name) in AUTOMATIC_LABELS:
                    field.verbose_name = gettext_lazy(str(field.verbose_name))  # type: ignore[union-attr]
