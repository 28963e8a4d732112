"""Documents stored once under their SHA-256: deduplication, write-once, failures and checks."""

from __future__ import annotations

import base64
import errno
import hashlib
import os
import signal
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from registry.authoring.snapshots import canonical_json
from registry.errors import ContentMissing, ImmutableVersionError, StorageUnavailable
from registry.models import ContentObject, Resource, ResourceVersion
from registry.serving import catalogs
from registry.serving.viewer import Viewer
from registry.storage import blobs as content
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
    from registry.authoring import drafts

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
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(content.os, "open", broken)
    with pytest.raises(StorageUnavailable, match="full"):
        release(resource, note="v2")
    assert list(ResourceVersion.objects.filter(entry=resource).values_list("number", flat=True)) == [1]
    served = catalogs.load_catalog("production").read_resource(Viewer(), "docs://a")
    assert served.version == 1 and served.result["contents"][0]["text"] == "version one"


# ------------------------------------------------------------------ damaged objects

DOCUMENT = bytes(range(256)) * 700 + b"tail"  # 179,204 bytes, a few write chunks' worth of a real document


def _fail_temporary_writes_after(monkeypatch, limit: int, error: int = errno.ENOSPC) -> list[int]:
    """os.write into the content store's temporary files fails once `limit` bytes went in (a disk
    filling up mid-write); other writes are untouched. Returns the running byte count."""
    real_write = os.write
    written = [0]

    def write(fd, data):
        if ".tmp" not in os.readlink(f"/proc/self/fd/{fd}"):
            return real_write(fd, data)
        room = limit - written[0]
        if room <= 0:
            raise OSError(error, os.strerror(error))
        done = real_write(fd, bytes(data[:room]))
        written[0] += done
        return done

    monkeypatch.setattr(content.os, "write", write)
    return written


def test_a_truncated_object_under_its_final_name_is_repaired_by_the_next_put_of_the_same_bytes(content_store):
    ref = content.put(DOCUMENT)
    path = content_store / content.object_name(ref.sha256)
    path.write_bytes(DOCUMENT[:40_960])  # what a disk filling up mid-write used to leave
    with pytest.raises(ContentMissing, match="damaged"):
        content.read(ref.sha256)

    assert content.put(DOCUMENT) == ref
    assert path.read_bytes() == DOCUMENT and content.read(ref.sha256) == DOCUMENT
    path.write_bytes(b"")  # a kill -9 before the first byte
    content.put_many([DOCUMENT])
    assert path.read_bytes() == DOCUMENT


def test_an_object_of_the_right_size_with_other_bytes_is_rewritten_too(content_store):
    ref = content.put(DOCUMENT)
    path = content_store / content.object_name(ref.sha256)
    path.write_bytes(b"x" * len(DOCUMENT))
    content.put(DOCUMENT)
    assert path.read_bytes() == DOCUMENT


@pytest.mark.parametrize("writer", [content.put, lambda data: content.put_many([data])], ids=["put", "put_many"])
def test_a_write_cut_short_leaves_nothing_under_the_final_name_and_the_next_put_completes_it(
        content_store, monkeypatch, writer):
    sha = content.sha256_of(DOCUMENT)
    written = _fail_temporary_writes_after(monkeypatch, 40_960)
    with pytest.raises(StorageUnavailable) as failure:
        writer(DOCUMENT)
    assert failure.value.reason == "full" and written[0] == 40_960
    assert stored_files(content_store) == []  # no short object, no temporary file left behind
    assert not content.exists(sha)
    monkeypatch.undo()
    writer(DOCUMENT)
    assert (content_store / content.object_name(sha)).read_bytes() == DOCUMENT


def test_a_read_only_store_is_reported_as_such(content_store, monkeypatch):
    _fail_temporary_writes_after(monkeypatch, 0, errno.EROFS)
    with pytest.raises(StorageUnavailable) as failure:
        content.put(DOCUMENT)
    assert failure.value.reason == "read_only"


# A separate process with a real short write: the kernel refuses bytes past RLIMIT_FSIZE (as a full
# disk would: EFBIG), or the process is killed (SIGKILL) after the bytes went out but before the
# rename. Nothing in the parent's database is needed, so the ContentObject record is stubbed out.
_CHILD = """
import os, resource, signal, sys, types
import django
from django.conf import settings
settings.configure(STORAGES={"registry": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                          "OPTIONS": {"location": sys.argv[1]}}})
django.setup()
stub = types.ModuleType("registry.storage.objects")
stub.ContentObject = types.SimpleNamespace(objects=types.SimpleNamespace(get_or_create=lambda **kw: None))
sys.modules["registry.storage.objects"] = stub
from registry.storage import blobs as content
data = bytes(range(256)) * 700 + b"tail"
if sys.argv[2] == "full":
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (40_960, resource.RLIM_INFINITY))
else:
    os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
try:
    content.put(data)
except Exception as exc:
    print(type(exc).__name__, getattr(exc, "reason", ""), exc)
    sys.exit(3)
"""


@pytest.mark.parametrize("how", ["full", "killed"])
def test_a_real_short_write_leaves_nothing_under_the_final_name(content_store, tmp_path, how):
    store = tmp_path / "child-store"
    done = subprocess.run([sys.executable, "-c", _CHILD, str(store), how], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=60)
    if how == "full":
        assert done.returncode == 3 and done.stdout.startswith("StorageUnavailable full"), (done.stdout, done.stderr)
    else:
        assert done.returncode == -signal.SIGKILL, (done.stdout, done.stderr)
    sha = content.sha256_of(DOCUMENT)
    assert not (store / content.object_name(sha)).exists()
    leftovers = [p for p in store.rglob("*") if p.is_file()]
    assert all(p.name.startswith(f".{sha}.") and p.name.endswith(".tmp") for p in leftovers), leftovers


def test_publishing_over_a_damaged_draft_object_is_refused(content_store):
    resource = make_resource("docs://img", text="", data=DOCUMENT, mime_type="application/octet-stream")
    (content_store / content.object_name(resource.data_sha256)).write_bytes(DOCUMENT[:100])
    with pytest.raises(ContentMissing, match="is damaged: 100 of 179,204 bytes stored"):
        release(resource)
    assert not ResourceVersion.objects.filter(entry=resource).exists()


def test_registry_check_quick_reports_a_short_object(content_store):
    short = release(make_resource("docs://short", text="a text long enough to be cut short"))
    release(make_resource("docs://fine", text="fine"))
    (content_store / content.object_name(short.snapshot["sha256"])).write_bytes(b"a text")
    err = StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("registry_check", "--quick", stdout=StringIO(), stderr=err)
    assert exit_info.value.code == 1
    assert (f"resource docs://short v1: content {short.snapshot['sha256']} is damaged: 6 of 34 bytes stored"
            in err.getvalue())
    assert "docs://fine" not in err.getvalue()


def test_registry_check_quick_passes_on_an_intact_store():
    release(make_resource("docs://fine", text="fine"))
    out = StringIO()
    call_command("registry_check", "--quick", stdout=out, stderr=StringIO())
    assert "present with its recorded size" in out.getvalue()


def test_reading_a_damaged_object_is_an_error_and_is_logged(content_store, caplog, monkeypatch):
    monkeypatch.setattr(content, "_logged", {})  # once a minute per object: start afresh
    version = release(make_resource("docs://bad", text="original text"))
    (content_store / content.object_name(version.snapshot["sha256"])).write_bytes(b"original")
    with caplog.at_level("ERROR", logger="registry.storage.blobs"):
        for _ in range(3):
            with pytest.raises(ContentMissing, match="damaged"):
                catalogs.load_catalog("production").read_resource(Viewer(), "docs://bad")
    logged = [r.getMessage() for r in caplog.records if r.name == "registry.storage.blobs"]
    assert len(logged) == 1 and version.snapshot["sha256"] in logged[0] and "does not match its hash" in logged[0]


def test_missing_content_is_a_clear_error_when_read(content_store):
    resource = make_resource("docs://gone", text="soon missing")
    version = release(resource)
    (content_store / content.object_name(version.snapshot["sha256"])).unlink()
    with pytest.raises(ContentMissing, match="missing from the content store"):
        catalogs.load_catalog("production").read_resource(Viewer(), "docs://gone")


def test_damaged_content_is_refused_rather_than_served(content_store):
    version = release(make_resource("docs://bad", text="original"))
    (content_store / content.object_name(version.snapshot["sha256"])).write_bytes(b"tampered")
    with pytest.raises(ContentMissing, match="does not match"):
        catalogs.load_catalog("production").read_resource(Viewer(), "docs://bad")


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
    result = catalogs.load_catalog("production").get_prompt(Viewer(), "pic", {}).result
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
