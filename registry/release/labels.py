"""The labels the registry knows, so a request for a label nobody serves is caught as the typo it
most likely is ("prodution") instead of being filed (issue 23).

A label is known when something uses it: an entry of any kind has it, an MCP client is served
from it, or it is `production`, `staging` or one of the protected labels of the settings. A new
label is allowed, but only when the person asking confirms it (a tick box on the request page,
`new_label: true` in the REST API).
"""

from __future__ import annotations

import difflib

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from registry.kinds import KINDS
from registry.models import PRODUCTION, STAGING, McpClient
from registry.release.services import protected_label_names


def known_label_names() -> list[str]:
    """Every label in use, production first, then staging, then the rest alphabetically."""
    names = {PRODUCTION, STAGING, *protected_label_names()}
    for kind in KINDS.values():
        names.update(kind.label_model.objects.values_list("name", flat=True).distinct())
    names.update(McpClient.objects.exclude(label="").values_list("label", flat=True).order_by().distinct())
    first = [PRODUCTION, STAGING]
    return first + sorted(names - set(first))


def check_known_label(label: str, *, confirmed: bool, known: list[str] | None = None) -> None:
    """Refuse `label` unless it is known or `confirmed` as new (ValidationError, code "unknown_label",
    naming the closest known label when there is one)."""
    known = known if known is not None else known_label_names()
    if confirmed or label in known:
        return
    close = difflib.get_close_matches(label, known, n=1, cutoff=0.6)
    if close:
        text = _("No entry or client uses the label '%(label)s'. Did you mean '%(close)s'? To ask for a new label "
                 "anyway, confirm that it is new.") % {"label": label, "close": close[0]}
    else:
        text = _("No entry or client uses the label '%(label)s' yet. To ask for a new label, confirm that it is "
                 "new.") % {"label": label}
    raise ValidationError(text, code="unknown_label")
