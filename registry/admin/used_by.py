"""The "Used by" panel of a snippet's and a resource's change page: who uses it, in which versions,
served by which labels, pinned or following. Read from `registry.release.uses.used_by`, the index
every publish path writes, so the panel costs a handful of queries whatever the registry's size."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse
from django.utils.translation import gettext as _

from registry.kinds import KINDS, kind_name
from registry.models import VersionedEntry
from registry.release.uses import used_by

SHOWN = 50


@dataclass
class UsedByRow:
    kind_name: str
    key: str
    url: str
    history_url: str
    version: int
    labels: list[str]
    how: str  # "pinned to v3", "follows its label" or, for a resource, "embedded when published"


@dataclass
class UsedBy:
    rows: list[UsedByRow]
    total: int

    @property
    def more(self) -> int:
        return max(0, self.total - len(self.rows))


def used_by_panel(entry: VersionedEntry) -> UsedBy:
    uses = used_by(entry.kind, entry.key)
    rows = []
    for use in uses[:SHOWN]:
        model_name = KINDS[use.kind].entry_model._meta.model_name
        if entry.kind == "resource":
            how = _("embedded or linked when published")
        elif use.pinned is not None:
            how = _("pinned to v%(number)s") % {"number": use.pinned}
        else:
            how = _("follows the label it is served from")
        rows.append(UsedByRow(str(kind_name(use.kind)), use.key,
                              reverse(f"admin:registry_{model_name}_change", args=[use.entry_id]),
                              reverse(f"admin:registry_{model_name}_history", args=[use.entry_id]),
                              use.version, use.labels, how))
    return UsedBy(rows, len(uses))
