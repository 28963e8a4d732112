"""Resource versions list their URI normalised (registry.formats.uris.lookup_uri), as the catalog serves it.

Versions published before URIs were normalised on save (0009) keep their snapshots, and their
listings (0012) copied the URI as it was. List pages read straight from the database
(registry/serving/pages.py) are ordered by the listed URI, so it must be the served one. The
listing is derived data, not part of the frozen snapshot; the snapshot is left as it is.
"""

from typing import Any

from django.db import migrations


def forwards(apps: Any, schema_editor: Any) -> None:
    from registry.formats.uris import lookup_uri

    versions = apps.get_model("registry", "ResourceVersion")
    for pk, listing in versions.objects.exclude(listing={}).values_list("pk", "listing").iterator():
        changed = False
        for part in (listing.get("item") or {}, listing.get("content") or {}):
            uri = part.get("uri")
            if isinstance(uri, str):
                try:
                    normal = lookup_uri(uri)
                except Exception:  # not a URI the normaliser understands: left as it is
                    continue
                if normal != uri:
                    part["uri"], changed = normal, True
        if changed:
            versions.objects.filter(pk=pk).update(listing=listing)  # historical manager: no insert-only guard


class Migration(migrations.Migration):
    dependencies = [("registry", "0015_translatable_model_names")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
