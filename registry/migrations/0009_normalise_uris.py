"""Resource URIs and URI templates are stored RFC 3986-normalised (registry.formats.uris).

Existing rows are rewritten to their normalised form (an IRI's raw characters percent-encoded,
scheme and host lower-cased, escapes upper-cased, `https://host` -> `https://host/`). Where two
rows would end up with one URI, neither is changed and the collision is printed: an editor
must rename one in the admin. Published versions keep their snapshots; the read side
normalises their URIs when it loads them.
"""

from django.db import migrations


def _normalise(apps, model_name, field, normalise, kind):
    Model = apps.get_model("registry", model_name)
    rows = list(Model.objects.values_list("pk", field))
    taken = {value for _pk, value in rows}
    wanted: dict[str, list[tuple[int, str]]] = {}
    for pk, value in rows:
        new = normalise(value)
        if new != value:
            wanted.setdefault(new, []).append((pk, value))
    for new, owners in wanted.items():
        if len(owners) > 1 or new in taken:
            print(f"\n  registry: cannot normalise {model_name} {field} {', '.join(v for _p, v in owners)!r}: "
                  f"{new!r} is taken; rename one of them in the admin")
            continue
        pk = owners[0][0]
        Model.objects.filter(pk=pk).update(**{field: new})
        # A running rollout finds its entry's served item by key.
        apps.get_model("registry", "Rollout").objects.filter(entry_kind=kind, entry_id=pk).update(entry_key=new)


def forwards(apps, schema_editor):
    from registry.formats.uris import lookup_uri, normalize_uri_template

    _normalise(apps, "Resource", "uri", lookup_uri, "resource")
    _normalise(apps, "ResourceTemplate", "uri_template", normalize_uri_template, "template")


class Migration(migrations.Migration):
    dependencies = [("registry", "0008_audit_client_changes")]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
