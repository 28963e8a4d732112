"""The bulk writer (registry.portable.bulk) writes the rows the per-entry services write.

Two copies of one registry, whose keys differ only by a token ("one" / "two"), get the same
changes imported: copy one through the services entry by entry (`bulk=False`), copy two through
the bulk writer. Every row written is read back with the token taken out, and the two must match.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from registry.authoring.snapshots import content_hash
from registry.models import (
    AuditEntry,
    ChangeLogEntry,
    ContentObject,
    Prompt,
    PromptLabel,
    PromptVersion,
    Resource,
    ResourceLabel,
    ResourceTemplate,
    ResourceTemplateLabel,
    ResourceTemplateVersion,
    ResourceVersion,
    ReviewRequest,
)
from registry.portable.importer import import_documents
from registry.release import services
from registry.signals import registry_changed
from tests.factories import PNG_1X1
from webhooks.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db
PNG = base64.b64encode(PNG_1X1).decode()


def document(token: str, version: int) -> str:
    """The registry copy `token`; version 2 changes most entries, moves labels and adds one."""
    v2 = version == 2
    doc = f"""
resources:
  - uri: docs://{token}-guide
    name: guide
    mime_type: text/markdown
    text: "# Guide {'v2' if v2 else 'v1'}"
    labels: [production, staging]
  - uri: docs://{token}-logo
    name: logo
    mime_type: image/png
    base64: {PNG if v2 else base64.b64encode(b'not yet a png').decode()}
  - uri: docs://{token}-same
    name: same
    text: "unchanged"
templates:
  - uri_template: tickets://{token}/{{id}}
    name: ticket
    body: "Ticket {{{{ id }}}}{' (v2)' if v2 else ''}"
    variables: [{{name: id, suggestions: [{'"1", "2"' if v2 else '"1"'}]}}]
prompts:
  - name: {token}-greet
    description: Say hello{' warmly' if v2 else ''}
    tags: [Demo{', new' if v2 else ''}]
    arguments:
      - {{name: who, required: true, suggestions: [world, team]}}
    messages:
      - {{role: user, text: "Hello {{{{ who }}}}{'!' if v2 else ''}"}}
      - {{role: user, resource: {{from: "docs://{token}-guide"}}}}
  - name: {token}-farewell
    description: Say goodbye
    labels: [production, {'canary' if v2 else 'staging'}]
    messages:
      - {{role: user, text: "Goodbye{' for now' if v2 else ''}"}}
  - name: {token}-steady
    description: Never changes
    labels: [production, staging{', canary' if v2 else ''}]
    messages:
      - {{role: user, text: Steady}}
"""
    if v2:  # new entries of every kind; the new prompt embeds the new resource
        doc = doc.replace("templates:\n", f"""  - uri: docs://{token}-added
    name: added
    text: "Added"
    labels: [production, staging]
templates:
  - uri_template: added://{token}/{{x}}
    name: added
    body: "Added {{{{ x }}}}"
""")
        doc += f"""  - name: {token}-new
    description: Added by the second import
    messages:
      - {{role: user, text: New}}
      - {{role: user, resource: {{from: "docs://{token}-added"}}}}
"""
    return doc


def _plain(value: Any, token: str) -> Any:
    return json.loads(json.dumps(value, default=str).replace(token, "TOKEN"))


def _by_entry(rows: list[tuple[Any, ...]], key: int) -> list[tuple[Any, ...]]:
    """Rows grouped by entry, each entry's in the order written: the bulk writer writes an entry's rows in
    the services' order, but a kind's entries it leaves to the services (a new one) come first."""
    return sorted(rows, key=lambda row: row[key])  # stable: each entry's rows keep their order


IMPORT_NOTES = ("import_digest", "import_revision", "import_version")


def _rows(token: str, audit_after: int, change_after: int, delivery_after: int) -> dict[str, Any]:
    """Everything the registry copy `token` holds, keys and ids made comparable."""
    out: dict[str, Any] = {}
    for model, key in ((Prompt, "name"), (Resource, "uri"), (ResourceTemplate, "uri_template")):
        rows = []
        for entry in model.objects.filter(**{f"{key}__contains": token}).order_by(key):
            # import_*: the bulk path's note of what it compared (registry.portable.unchanged), not content
            fields = {f.attname: getattr(entry, f.attname) for f in entry._meta.concrete_fields
                      if f.attname not in ("id", "created_at", "updated_at", *IMPORT_NOTES)}
            children = {rel: [{f.attname: getattr(c, f.attname) for f in c._meta.concrete_fields
                               if f.attname not in ("id", "prompt_id", "template_id", "resource_id")}
                              for c in getattr(entry, rel).order_by("pk")]
                        for rel in ("arguments", "messages", "variables") if hasattr(entry, rel)}
            rows.append({**fields, **children})
        out[model.__name__] = _plain(rows, token)
    for model in (PromptVersion, ResourceVersion, ResourceTemplateVersion):
        rows = []
        for version in model.objects.filter(entry__in=model._meta.get_field("entry").related_model.objects.all())\
                .select_related("entry", "parent").order_by("entry_id", "number"):
            if token not in version.entry.key:
                continue
            assert version.content_hash == content_hash(version.snapshot)
            rows.append({"entry": version.entry.key, "number": version.number,
                         "parent": version.parent.number if version.parent else None, "snapshot": version.snapshot,
                         "listing": version.listing, "note": version.change_note, "author": version.author_name})
        out[model.__name__] = _plain(rows, token)
    for model in (PromptLabel, ResourceLabel, ResourceTemplateLabel):
        out[model.__name__] = _plain(sorted(
            [(label.entry.key, label.name, label.version.number, label.protected, label.moved_by, label.served_key)
             for label in model.objects.select_related("entry", "version") if token in label.entry.key]), token)
    audits = AuditEntry.objects.filter(pk__gt=audit_after).order_by("pk")
    out["audit"] = _by_entry(_plain([(a.action, a.entry_kind, a.entry_key, a.label, a.from_version, a.to_version,
                                      a.changes, a.note, a.actor_name, a.actor_id)
                                     for a in audits if token in a.entry_key], token), 2)
    out["changes"] = _by_entry(_plain([(c.entry_kind, c.entry_key, c.label, c.list_changed) for c in
                                       ChangeLogEntry.objects.filter(pk__gt=change_after).order_by("pk")
                                       if token in c.entry_key], token), 1)
    deliveries = []
    for d in WebhookDelivery.objects.filter(pk__gt=delivery_after).order_by("pk"):
        if token in d.payload["entry"]["key"]:
            payload = {k: v for k, v in d.payload.items() if k not in ("audit_id", "occurred_at")}
            payload["entry"] = {k: v for k, v in payload["entry"].items() if k != "id"}
            deliveries.append((d.event, d.webhook_id, payload, payload["entry"]["key"]))
    out["deliveries"] = _by_entry(_plain(deliveries, token), 3)
    return out


def _marks() -> tuple[int, int, int]:
    def last(model: Any) -> int:
        return model.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    return last(AuditEntry), last(ChangeLogEntry), last(WebhookDelivery)


@pytest.fixture
def hook(settings, monkeypatch):
    from webhooks import delivery

    monkeypatch.setattr(delivery, "wake", lambda: None)  # the outbox rows are compared, nothing is sent
    settings.WEBHOOKS_ALLOWED_NETWORKS = "127.0.0.0/8,::1/128"
    return Webhook.objects.create(name="ci", url="http://127.0.0.1:9/hook", events=["version.published", "label.moved"])


def _announced(run: Any, capture: Any) -> list[Any]:
    batches: list[Any] = []

    def receiver(sender: Any, batch: Any, **kwargs: Any) -> None:
        batches.append(batch)

    registry_changed.connect(receiver, dispatch_uid="test-bulk-announced")
    try:
        with capture(execute=True):
            run()
    finally:
        registry_changed.disconnect(dispatch_uid="test-bulk-announced")
    return batches


@pytest.mark.parametrize("publish", [True, False], ids=["publish", "drafts"])
def test_the_bulk_writer_writes_the_rows_the_per_entry_services_write(tmp_path, hook, publish,
                                                                       django_capture_on_commit_callbacks):
    files = {}
    for token in ("one", "two"):
        for version in (1, 2):
            files[token, version] = tmp_path / f"{token}-{version}.yaml"
            files[token, version].write_text(document(token, version))
        with django_capture_on_commit_callbacks(execute=True):  # as if the setup had committed
            import_documents(files[token, 1], publish=True, note="first", bulk=False)
            farewell = Prompt.objects.get(name=f"{token}-farewell")
            services.move_label(farewell, label="production", version_number=1, acting_user=None, note="pin")
            steady = Prompt.objects.get(name=f"{token}-steady")  # the file puts its draft back on v1: an edit,
            steady.description = "Edited in the admin"  # no publish, and a label moved onto v1 after the edit
            steady.save()
    marks = _marks()
    reports, announced = {}, {}
    for token, bulk in (("one", False), ("two", True)):
        announced[token] = _announced(lambda token=token, bulk=bulk: reports.__setitem__(token, import_documents(
            files[token, 2], publish=publish, note="second" if publish else "", bulk=bulk)),
            django_capture_on_commit_callbacks)
    one, two = _rows("one", *marks), _rows("two", *marks)
    for table in one:
        assert one[table] == two[table], table
    assert [(o.status, o.published, o.labels_moved, _plain(o.changes, "one")) for o in reports["one"].outcomes] == \
        [(o.status, o.published, o.labels_moved, _plain(o.changes, "two")) for o in reports["two"].outcomes]
    assert len(announced["one"]) == len(announced["two"]) == (1 if publish else 0)  # one announcement per import
    if publish:
        assert sorted(_plain([(c.kind, c.key, c.label, c.list_changed) for c in announced["one"][0].changes], "one")) \
            == sorted(_plain([(c.kind, c.key, c.label, c.list_changed) for c in announced["two"][0].changes], "two"))
        assert len(two["deliveries"]) > 5 and any(a[0] == "override" for a in two["audit"])
        assert {o.key: o.labels_moved for o in reports["two"].outcomes}["two-steady"] == ["canary"]
    stored = Resource.objects.get(uri="docs://two-logo")
    assert ContentObject.objects.filter(sha256=stored.data_sha256).exists() and stored.data == PNG_1X1


def test_a_bulk_import_sends_one_announcement_and_reimporting_it_writes_nothing(tmp_path,
                                                                               django_capture_on_commit_callbacks):
    first, second = tmp_path / "1.yaml", tmp_path / "2.yaml"
    first.write_text(document("two", 1))
    second.write_text(document("two", 2))
    with django_capture_on_commit_callbacks(execute=True):
        import_documents(first, publish=True, note="first")
    batches = _announced(lambda: import_documents(second, publish=True, note="second"),
                         django_capture_on_commit_callbacks)
    assert len(batches) == 1 and len(batches[0].changes) >= 7
    marks = _marks()
    again = _announced(lambda: import_documents(second, publish=True, note="second"),
                       django_capture_on_commit_callbacks)
    assert again == [] and _marks() == marks
    assert not Prompt.objects.filter(name="two-greet", revision__gt=2).exists()


def test_label_rows_written_in_bulk_carry_the_served_key_and_projection_of_their_version(tmp_path):
    """Cold list pages read the served key and the version's projection off the label row
    (registry/serving/pages.py, catalogs.py): a bulk-created label without them sends pages down
    the slow path, and a label moved onto a renamed draft's new version must follow the new name."""
    from registry.models.base import served_key_of, served_projection

    path = tmp_path / "doc.yaml"
    path.write_text(document("two", 1))
    import_documents(path, publish=True, note="first")
    greet = Prompt.objects.get(name="two-greet")
    greet.name = "two-hello"  # renamed in the admin: production still serves v1 as two-greet
    greet.save()
    path.write_text(document("two", 2).replace("two-greet", "two-hello"))
    import_documents(path, publish=True, note="second")
    for model in (PromptLabel, ResourceLabel, ResourceTemplateLabel):
        rows = list(model.objects.select_related("version"))
        assert rows and all(label.served_key == served_key_of(label.version.listing, label.version.snapshot)
                            for label in rows), model.__name__
        assert all(label.served == served_projection(label.version) for label in rows), model.__name__
    assert set(PromptLabel.objects.filter(entry=greet).values_list("served_key", flat=True)) == {"two-hello"}


def test_entries_with_a_pending_review_are_left_to_the_services_which_supersede_it(tmp_path, editor):
    path = tmp_path / "doc.yaml"
    path.write_text(document("two", 1))
    import_documents(path, publish=True, note="first")
    greet = Prompt.objects.get(name="two-greet")
    greet.description = "asked for"
    greet.save()
    from registry.release import reviews

    review = reviews.request_publication(greet, acting_user=editor, note="please", label="production")
    path.write_text(document("two", 2))
    report = import_documents(path, publish=True, note="second")
    review.refresh_from_db()
    assert review.status == "superseded"
    assert {o.key: o.published for o in report.outcomes}["two-greet"] == 2
    assert ReviewRequest.objects.filter(status="pending").count() == 0


def _many(count: int, version: int) -> str:
    items = "".join(f"""  - name: many{count}-{i:03d}
    description: Prompt {i} v{version}
    arguments: [{{name: who, required: true}}]
    messages: [{{role: user, text: "Hello {{{{ who }}}} v{version}"}}]
""" for i in range(count))
    items += "".join(f"""  - uri: docs://many{count}-{i:03d}
    name: many-{i:03d}
    text: "Doc {i} v{version}"
""" for i in range(count))
    head, tail = items.split("  - uri:", 1)
    return "prompts:\n" + head + "resources:\n  - uri:" + tail


def _import_queries(tmp_path: Path, count: int) -> tuple[int, int]:
    """Queries of the first import (every entry new) and of the second (every entry changed)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    path = tmp_path / f"many-{count}.yaml"
    made = []
    for version in (1, 2):
        path.write_text(_many(count, version))
        with CaptureQueriesContext(connection) as queries:
            report = import_documents(path, publish=True, note=f"import {version}")
        assert report.published == 2 * count
        made.append(len(queries) - (2 * count if version == 1 else 0))  # one INSERT per new entry
    return made[0], made[1]


def test_a_publish_import_runs_the_same_number_of_queries_for_3_or_12_changed_entries(tmp_path):
    """Within one batch of rows (the database bounds a statement's parameters), so 12 prompts + 12 resources;
    a new entry costs its own INSERT (its key is needed by its rows) and nothing more."""
    few = _import_queries(tmp_path, 3)  # first: it also pays for what a process reads once
    assert _import_queries(tmp_path, 12) == few
