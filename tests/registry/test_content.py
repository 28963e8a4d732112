"""Documents stored once under their SHA-256: deduplication, write-once, failures and checks."""

from __future__ import annotations

import base64
import hashlib
from io import StringIO

import pytest
from django.core.management import call_command

from registry import catalog, content, services
from registry.catalog import Viewer
from registry.errors import ContentMissing, ImmutableVersionError
from registry.models import ContentObject, Resource, ResourceVersion
from registry.snapshots import canonical_json
from tests.factories import PNG_1X1, make_prompt, make_resource, make_user, release

pytestmark = pytest.mark.django_db


def stored_files(root) -> list:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_same_bytes_uploaded_twice_are_stored_once(content_store):
    first = make_resource("docs://a", text="", data=PNG_1X1, mime_type="image/png")
    second = make_resource("docs://b", text="", data=PNG_1X1, mime_type="image/png")
    release(first)
    release(second)
    sha = hashlib.sha256(PNG_1X1).hexdigest()
    assert first.data_sha256 == second.data_sha256 == sha
    assert stored_files(content_store) == [content_store / "blobs" / sha[:2] / sha]
    assert ContentObject.objects.filter(sha256=sha).count() == 1


def test_version_snapshot_references_the_hash_and_holds_no_bytes(content_store):
    resource = make_resource("docs://img", text="", data=PNG_1X1, mime_type="image/png")
    version = release(resource)
    assert version.snapshot["sha256"] == hashlib.sha256(PNG_1X1).hexdigest()
    assert version.snapshot["encoding"] == "base64" and version.snapshot["size"] == len(PNG_1X1)
    assert "blob" not in version.snapshot and base64.b64encode(PNG_1X1).decode() not in canonical_json(version.snapshot)
    assert version.listing["content"]["sha256"] == version.snapshot["sha256"]


def test_changed_bytes_change_the_version_content_hash():
    resource = make_resource("docs://img", text="", data=PNG_1X1, mime_type="image/png")
    v1 = release(resource)
    resource.data = PNG_1X1 + b"\x00"
    resource.save()
    v2 = release(resource, note="new bytes")
    assert v1.content_hash != v2.content_hash


def test_rollback_and_restore_copy_no_bytes(content_store):
    from registry import drafts

    publisher = make_user(None)
    resource = make_resource("docs://img", text="", data=PNG_1X1, mime_type="image/png")
    release(resource)
    resource.data = b"other bytes"
    resource.save()
    release(resource, note="v2")
    before = stored_files(content_store)
    drafts.restore_draft(resource, 1, acting_user=publisher)
    resource.refresh_from_db()
    assert resource.data_sha256 == hashlib.sha256(PNG_1X1).hexdigest()
    assert stored_files(content_store) == before


def test_storing_existing_bytes_never_overwrites_the_object(content_store):
    ref = content.put(b"document")
    path = content_store / content.object_name(ref.sha256)
    mtime = path.stat().st_mtime_ns
    assert content.put(b"document") == ref
    assert path.stat().st_mtime_ns == mtime and stored_files(content_store) == [path]


def test_content_objects_are_never_deleted():
    content.put(b"document")
    with pytest.raises(ImmutableVersionError):
        ContentObject.objects.get().delete()


def test_a_storage_failure_during_publish_rolls_the_publish_back(monkeypatch):
    resource = make_resource("docs://a", text="version one")
    release(resource)
    resource.text = "version two"
    resource.save()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(content.storage().__class__, "save", broken)
    with pytest.raises(OSError):
        release(resource, note="v2")
    assert list(ResourceVersion.objects.filter(entry=resource).values_list("number", flat=True)) == [1]
    served = catalog.load_catalog("production").read_resource(Viewer(), "docs://a")
    assert served.version == 1 and served.result["contents"][0]["text"] == "version one"


def test_missing_content_is_a_clear_error_when_read(content_store):
    resource = make_resource("docs://gone", text="soon missing")
    version = release(resource)
    (content_store / content.object_name(version.snapshot["sha256"])).unlink()
    with pytest.raises(ContentMissing, match="missing from the content store"):
        catalog.load_catalog("production").read_resource(Viewer(), "docs://gone")


def test_damaged_content_is_refused_rather_than_served(content_store):
    version = release(make_resource("docs://bad", text="original"))
    (content_store / content.object_name(version.snapshot["sha256"])).write_bytes(b"tampered")
    with pytest.raises(ContentMissing, match="does not match"):
        catalog.load_catalog("production").read_resource(Viewer(), "docs://bad")


def test_registry_check_lists_missing_and_damaged_content_and_exits_1(content_store):
    gone = release(make_resource("docs://gone", text="gone"))
    bad = release(make_resource("docs://bad", text="bad"))
    release(make_resource("docs://fine", text="fine"))
    (content_store / content.object_name(gone.snapshot["sha256"])).unlink()
    (content_store / content.object_name(bad.snapshot["sha256"])).write_bytes(b"x")
    err = StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("registry_check", stdout=StringIO(), stderr=err)
    assert exit_info.value.code == 1
    text = err.getvalue()
    assert f"resource docs://gone v1: content {gone.snapshot['sha256']} is missing" in text
    assert f"resource docs://bad v1: content {bad.snapshot['sha256']} does not match its hash" in text
    assert "docs://fine" not in text


def test_registry_check_passes_on_an_intact_store():
    release(make_resource("docs://fine", text="fine"))
    release(make_prompt(arguments=[], messages=[{"kind": "image", "mime_type": "image/png", "data": PNG_1X1}]))
    out = StringIO()
    call_command("registry_check", stdout=out, stderr=StringIO())
    assert "intact" in out.getvalue()


def test_prompt_image_is_served_from_the_store_as_base64():
    prompt = make_prompt("pic", arguments=[], messages=[{"kind": "image", "mime_type": "image/png", "data": PNG_1X1}])
    version = release(prompt)
    assert "data" not in version.snapshot["messages"][0]["content"]
    result = catalog.load_catalog("production").get_prompt(Viewer(), "pic", {}).result
    assert result["messages"][0]["content"] == {"type": "image", "data": base64.b64encode(PNG_1X1).decode(),
                                                "mimeType": "image/png"}


def test_a_draft_built_for_validation_stores_nothing(content_store):
    Resource(uri="docs://x", name="x", data=b"never saved")
    assert stored_files(content_store) == []


def test_saving_bytes_over_the_upload_limit_is_refused_with_the_size(settings):
    settings.REGISTRY = {**settings.REGISTRY, "MAX_UPLOAD_BYTES": 4}
    from registry.errors import ContentTooLarge

    with pytest.raises(ContentTooLarge, match="is 5 bytes; the limit"):
        make_resource("docs://big", text="", data=b"12345")
    assert not Resource.objects.filter(uri="docs://big").exists()


def test_text_over_the_upload_limit_cannot_be_published(settings):
    settings.REGISTRY = {**settings.REGISTRY, "MAX_UPLOAD_BYTES": 4}
    from registry.errors import InvalidEntry

    resource = make_resource("docs://long", text="too long")
    with pytest.raises(InvalidEntry, match="the text is 8 bytes; the limit is 4 bytes"):
        release(resource)
