"""How a failed save shows its errors: a summary at the top linking to each faulty field.

Django's change form says "Please correct the error below." and leaves the editor to find the
error, which on a prompt with a few messages sits screens further down. The summary lists every
error with a link to its field (or to its inline row, or to the inline group for errors of the
whole group), and change_form.js takes the editor to the first one.

Messages that name code (`customer_name`) are written with backticks in the catalogs; they are
shown as <code> by escaping the whole message first and only then formatting the backticks, so
nothing an editor typed ever reaches the page as markup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.forms import BaseForm
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import capfirst
from django.utils.translation import gettext as _

_CODE = re.compile(r"`([^`\n]+)`")


def code_spans(message: str) -> SafeString:
    """Escape `message`, then show each `name` in backticks as <code>name</code>."""
    return mark_safe(_CODE.sub(r"<code>\1</code>", escape(message)))  # escaped first, so only <code> is markup


@dataclass(frozen=True)
class ErrorLink:
    """One line of the summary: where the error is (words; empty for the entry as a whole), its anchor, the message."""

    where: str
    anchor: str
    message: str


def _form_errors(form: BaseForm, where_prefix: str, row_anchor: str) -> list[ErrorLink]:
    links: list[ErrorLink] = []
    for name, errors in form.errors.items():
        if name in form.fields:
            field = form[name]
            where = f"{where_prefix}{capfirst(field.label)}" if field.label else where_prefix.rstrip(" ·")
            anchor = field.auto_id or row_anchor
        else:  # non-field errors of the form: the form (or its inline row) as a whole
            where, anchor = where_prefix.rstrip(" ·"), row_anchor
        links.extend(ErrorLink(where, anchor, str(message)) for message in errors)
    return links


def error_summary(adminform: Any, inline_admin_formsets: Iterable[Any]) -> list[ErrorLink]:
    """Every error of the change form in page order: the entry's fields, then each inline."""
    # Errors of the entry as a whole are shown in the summary itself (and under Django's error note).
    links = _form_errors(adminform.form, "", "registry-error-summary")
    for inline in inline_admin_formsets:
        formset = inline.formset
        group = f"{formset.prefix}-group"
        name = capfirst(inline.opts.verbose_name)
        for message in formset.non_form_errors():
            links.append(ErrorLink(capfirst(inline.opts.verbose_name_plural), group, str(message)))
        for index, form in enumerate(formset.forms):
            if not form.errors:
                continue
            where = _("%(inline)s %(number)s") % {"inline": name, "number": index + 1} + " · "
            links.extend(_form_errors(form, where, f"{formset.prefix}-{index}"))
    return links
