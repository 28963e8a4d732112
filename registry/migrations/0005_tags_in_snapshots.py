"""Tags move into the published snapshot (they decide which scoped clients see a version).

Until now every version was served with the draft's current tags. To keep serving exactly what
clients see today, existing versions (and pending draft review requests) get the entry's current
tags written into their snapshot, and their content hash is recomputed over the new canonical
snapshot. This is the one rewrite of version rows the project allows: what each version serves,
and to whom, is unchanged; only where that fact is recorded moves.
"""

import hashlib
import json

from django.db import migrations


def _tags(text):
    return sorted({t.strip().lower() for t in (text or "").split(",") if t.strip()})


def _digest(snapshot):
    canonical = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


KINDS = {"prompt": ("Prompt", "PromptVersion"), "resource": ("Resource", "ResourceVersion"),
         "template": ("ResourceTemplate", "ResourceTemplateVersion")}


def forwards(apps, schema_editor):
    ReviewRequest = apps.get_model("registry", "ReviewRequest")
    for kind, (entry_name, version_name) in KINDS.items():
        Entry = apps.get_model("registry", entry_name)
        Version = apps.get_model("registry", version_name)
        tagged = {pk: _tags(text) for pk, text in Entry.objects.exclude(tags="").values_list("pk", "tags")}
        tagged = {pk: tags for pk, tags in tagged.items() if tags}
        for version in Version.objects.filter(entry_id__in=list(tagged)).iterator():
            if "tags" in version.snapshot:
                continue
            snapshot = {**version.snapshot, "tags": tagged[version.entry_id]}
            Version.objects.filter(pk=version.pk).update(snapshot=snapshot, content_hash=_digest(snapshot))
        pending = ReviewRequest.objects.filter(entry_kind=kind, status="pending", entry_id__in=list(tagged))
        for review in pending.exclude(snapshot=None):
            if "tags" in review.snapshot:
                continue
            snapshot = {**review.snapshot, "tags": tagged[review.entry_id]}
            ReviewRequest.objects.filter(pk=review.pk).update(snapshot=snapshot, content_hash=_digest(snapshot))


class Migration(migrations.Migration):
    dependencies = [("registry", "0004_rollout_base_version")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
