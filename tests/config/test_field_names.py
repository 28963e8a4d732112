"""Every field of the project's models is named for people explicitly, in their language.

Django makes a field's name from its attribute ("updated_at" -> "updated at"), in English and
outside every catalog; the admin shows it as a change-list column, a form label and a filter
title. So each field carries an explicit `verbose_name` marked for translation, and each of
those names has a German and a Chinese translation in the committed catalogs.
"""

from __future__ import annotations

import gettext
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.db import models
from django.utils.functional import Promise
from django.utils.translation import override

PROJECT_APPS = ("registry", "webhooks", "oauth", "mcp_endpoint")
LOCALE = Path(settings.BASE_DIR) / "locale"
CATALOGS = {"de": "de", "zh_Hans": "zh-hans"}  # folder -> language code the admin activates


def project_fields() -> list[tuple[str, models.Field]]:
    """Each concrete field of each concrete model of the project's apps, inherited ones included
    (Django's own automatic primary keys and parent links aside: Django names them)."""
    found = []
    for label in PROJECT_APPS:
        for model in apps.get_app_config(label).get_models():
            for field in [*model._meta.local_fields, *model._meta.local_many_to_many]:
                if not field.auto_created:
                    found.append((f"{model._meta.label}.{field.name}", field))
    return found


def _compiled(folder: str) -> dict:
    with (LOCALE / folder / "LC_MESSAGES" / "django.mo").open("rb") as handle:
        return dict(gettext.GNUTranslations(handle)._catalog)  # type: ignore[attr-defined]


def test_the_project_has_fields_to_check():
    assert len(project_fields()) > 150


def test_every_field_has_an_explicit_translatable_verbose_name():
    """`_verbose_name` is what the field was declared with (None = Django's automatic name)."""
    automatic = [name for name, field in project_fields() if field._verbose_name is None]
    assert automatic == [], "give these fields verbose_name=_('...')"
    untranslatable = [name for name, field in project_fields() if not isinstance(field._verbose_name, Promise)]
    assert untranslatable == [], "mark these verbose names with gettext_lazy"


def test_every_model_names_itself_translatably_in_the_singular_and_the_plural():
    """Django's automatic plural appends an "s" to the translated singular ("MCP-Sitzungs")."""
    unnamed = [model._meta.label for label in PROJECT_APPS for model in apps.get_app_config(label).get_models()
               if not {"verbose_name", "verbose_name_plural"} <= model._meta.original_attrs.keys()
               or not isinstance(model._meta.verbose_name, Promise)
               or not isinstance(model._meta.verbose_name_plural, Promise)]
    assert unnamed == []


def _names_shown(model_names: bool) -> list[tuple[str, object]]:
    if not model_names:
        return [(name, field.verbose_name) for name, field in project_fields()]
    return [(f"{model._meta.label} ({which})", getattr(model._meta, which))
            for label in PROJECT_APPS for model in apps.get_app_config(label).get_models()
            for which in ("verbose_name", "verbose_name_plural")]


@pytest.mark.parametrize("model_names", [False, True], ids=["fields", "models"])
@pytest.mark.parametrize("folder", CATALOGS)
def test_every_name_shown_is_translated(folder, model_names):
    """In German and Chinese a field's or a model's name is never the English one left over: its msgid is in the
    compiled catalog with a translation (which may equal the English word only where the catalog
    says so deliberately)."""
    catalog = _compiled(folder)
    missing = []
    with override(CATALOGS[folder]):
        for name, shown in _names_shown(model_names):
            with override("en"):
                english = str(shown)
            if not catalog.get(english) or str(shown) != catalog[english]:
                missing.append((name, english))
    assert missing == []
