from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from registry.authoring.snapshots import content_hash, snapshot_of
from registry.authoring.validation import validate_entry
from registry.management.commands.bench_load import synthetic_docs, synthetic_prompts
from registry.models import (
    AuditEntry,
    ChangeLogEntry,
    Prompt,
    PromptVersion,
    Resource,
    ResourceTemplate,
)
from registry.serving.catalogs import catalog_for
from registry.serving.viewer import Viewer

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "registry.yaml"


def run(*args: str, **options) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


# ------------------------------------------------------------------ registry_import / registry_export
def test_registry_import_prints_what_changed_and_a_summary():
    out, _ = run("registry_import", str(DEMO), publish=True, note="Demo data")
    assert "created prompt code-review; published v1" in out
    assert out.strip().splitlines()[-1] == ("snippets: 1 created; prompts: 5 created; resources: 3 created; "
                                             "templates: 1 created; published 10")

    out, _ = run("registry_import", str(DEMO), publish=True, note="Demo data")
    assert out.strip() == ("snippets: 1 unchanged; prompts: 5 unchanged; resources: 3 unchanged; "
                           "templates: 1 unchanged; published 0")


def test_registry_import_publish_requires_a_note():
    with pytest.raises(CommandError, match="--publish needs --note"):
        run("registry_import", str(DEMO), publish=True)
    assert Prompt.objects.count() == 0


def test_registry_import_dry_run_prints_the_diff_and_saves_nothing(tmp_path):
    run("registry_import", str(DEMO), publish=True, note="Demo data")
    changed = DEMO.read_text().replace("Focus on {{ focus }}.", "Focus mostly on {{ focus }}.")
    (tmp_path / "registry.yaml").write_text(changed)
    for side_file in ("style-guide.md", "logo.png"):
        (tmp_path / side_file).write_bytes((DEMO.parent / side_file).read_bytes())
    versions = PromptVersion.objects.count()

    out, _ = run("registry_import", "registry.yaml", dry_run=True, publish=True, note="Wording")

    assert "updated prompt code-review; published v2" in out
    assert "messages[2].content.text: 'You are reviewing" in out
    assert out.strip().endswith("published 1 (dry run: nothing saved)")
    assert PromptVersion.objects.count() == versions
    assert "Focus on" in Prompt.objects.get(name="code-review").messages.get(position=1).text


def test_registry_import_failure_lists_problems_and_exits_with_an_error(tmp_path):
    (tmp_path / "bad.yaml").write_text("prompts:\n  - name: p\n    mesages: []\n")
    err = StringIO()
    with pytest.raises(CommandError, match="nothing was imported") as caught:
        call_command("registry_import", "bad.yaml", stdout=StringIO(), stderr=err)
    assert caught.value.returncode == 1
    assert ("bad.yaml:3: prompts[1] (name: p): mesages: unknown key 'mesages'. Did you mean 'messages'?"
            in err.getvalue())
    assert "bad.yaml:2: prompts[1] (name: p): 'messages' is required." in err.getvalue()


def test_registry_export_to_stdout_reads_back_without_changes(tmp_path):
    run("registry_import", str(DEMO), publish=True, note="Demo data")
    out, _ = run("registry_export", "-")
    assert yaml.safe_load(out)["prompts"][0]["name"] == "brand-check"
    (tmp_path / "export.yaml").write_text(out)
    audit = AuditEntry.objects.count()

    summary, _ = run("registry_import", "export.yaml", publish=True, note="Round trip")

    assert "5 unchanged" in summary and "published 0" in summary
    assert AuditEntry.objects.count() == audit


def test_registry_export_writes_a_file(tmp_path):
    run("registry_import", str(DEMO))
    run("registry_export", "out.yaml")
    assert "name: code-review" in (tmp_path / "out.yaml").read_text()


# ------------------------------------------------------------------ bench_load
def test_bench_load_follows_the_synthetic_naming_convention_and_publishes_to_production():
    out, _ = run("bench_load", prompts=3, resources=2)
    assert out.startswith("added 3 prompts, 3 resources, 1 template")

    assert list(Prompt.objects.values_list("name", flat=True)) == ["prompt-00000", "prompt-00001", "prompt-00002"]
    assert sorted(Resource.objects.values_list("uri", flat=True)) == [
        "docs://blob-00000", "docs://doc-00000", "docs://doc-00001"]
    catalog = catalog_for("production")
    viewer = Viewer()
    result = catalog.get_prompt(viewer, "prompt-00001", {"topic": "zebra", "audience": "owls"}).result
    assert [m["role"] for m in result["messages"]] == ["user", "assistant"]
    user_text = result["messages"][0]["content"]["text"]
    assert user_text.startswith("[prompt-00001] ") and "zebra" in user_text and "owls" in user_text
    assert all(400 <= len(m["content"]["text"]) <= 700 for m in result["messages"])
    listing = {p["name"]: p for p in catalog.prompts(viewer)}["prompt-00001"]
    assert [(a["name"], a["required"]) for a in listing["arguments"]] == [("topic", True), ("audience", True)]
    assert catalog.complete(viewer, {"type": "ref/prompt", "name": "prompt-00000"}, "audience", "e")["values"] == [
        "engineers", "executives"]

    doc = catalog.read_resource(viewer, "docs://doc-00001").result["contents"][0]
    assert doc["mimeType"] == "text/markdown" and doc["text"].startswith("# doc-00001 v1\n")
    assert 1900 <= len(doc["text"]) <= 2200
    blob = Resource.objects.get(uri="docs://blob-00000")
    assert blob.mime_type == "application/octet-stream" and len(bytes(blob.data)) == 1024
    by_tag = catalog.read_resource(viewer, "docs://by-tag/alpha").result["contents"][0]
    assert by_tag["mimeType"] == "text/plain" and "alpha" in by_tag["text"]
    assert [t["uriTemplate"] for t in catalog.templates(viewer)] == [
        "docs://by-tag/{tag}", "registry://prompts/{name}/changelog"]  # the built-in dynamic template last


def test_bench_load_blobs_adds_published_4_mib_resources_once():
    out, _ = run("bench_load", prompts=0, resources=0, blobs=2)
    assert "2 blobs of 4 MiB" in out
    big = Resource.objects.filter(uri__startswith="docs://big-").order_by("uri")
    assert [r.uri for r in big] == ["docs://big-00000", "docs://big-00001"]
    assert all(len(bytes(r.data)) == 4 * 1024 * 1024 for r in big)
    served = catalog_for("production").read_resource(Viewer(), "docs://big-00001").result["contents"][0]
    assert served["mimeType"] == "application/octet-stream" and len(served["blob"]) > 5_000_000
    out, _ = run("bench_load", prompts=0, resources=0, blobs=2)
    assert "0 blobs of 4 MiB" in out and Resource.objects.filter(uri__startswith="docs://big-").count() == 2


def test_bench_load_versions_match_what_publishing_the_drafts_would_make():
    run("bench_load", prompts=2, resources=1)
    for entry in [*Prompt.objects.all(), *Resource.objects.all(), *ResourceTemplate.objects.all()]:
        version = entry.versions.get()
        assert version.snapshot == snapshot_of(entry)
        assert version.content_hash == content_hash(snapshot_of(entry))
        assert entry.labels.get().name == "production"
        assert validate_entry(entry).ok


def test_bench_load_is_deterministic_and_keeps_existing_entries_on_rerun():
    run("bench_load", prompts=2, resources=2, seed=7)
    first = {p.name: p.versions.get().content_hash for p in Prompt.objects.all()}
    audit = AuditEntry.objects.count()
    assert audit == 3 and ChangeLogEntry.objects.count() == 3  # one summary per kind

    out, _ = run("bench_load", prompts=3, resources=2, seed=99)

    assert out.startswith("added 1 prompts, 0 resources, 0 template")
    assert {p.name: p.versions.get().content_hash for p in Prompt.objects.filter(name__in=first)} == first
    assert AuditEntry.objects.count() == audit + 1
    assert re.match(r"prompt-00002 \(1 new\)", AuditEntry.objects.first().entry_key)


def test_bench_load_names_do_not_depend_on_the_seed_but_contents_do():
    same = synthetic_prompts(3, 42)
    assert synthetic_prompts(3, 42) == same
    other = synthetic_prompts(3, 43)
    assert [p[0] for p in other] == [p[0] for p in same] and other != same
    assert [d[0] for d in synthetic_docs(2, 1)] == [d[0] for d in synthetic_docs(2, 2)] == [
        "docs://doc-00000", "docs://doc-00001"]


def test_registry_import_refuses_yaml_aliases_naming_the_file_and_line(tmp_path):
    (tmp_path / "loop.yaml").write_text("prompts:\n  - &a [*a]\n")
    err = StringIO()
    with pytest.raises(CommandError, match="1 problem"):
        call_command("registry_import", "loop.yaml", dry_run=True, stdout=StringIO(), stderr=err)
    assert err.getvalue().startswith("loop.yaml:2: YAML aliases are not supported: *a")
    assert Prompt.objects.count() == 0


# ------------------------------------------------------------------ demo_setup
def test_demo_setup_creates_the_demo_logins_with_a_password_the_validators_accept(tmp_path, monkeypatch):
    from django.contrib.auth import authenticate, get_user_model
    from django.contrib.auth.password_validation import validate_password
    from django.test import RequestFactory

    from registry.management.commands import demo_setup

    monkeypatch.setattr(demo_setup, "CREDENTIALS_FILE", tmp_path / ".demo-credentials")
    monkeypatch.setattr(demo_setup, "DEMO_DATA", tmp_path / "absent.yaml")
    out, _ = run("demo_setup")
    password = (tmp_path / ".demo-credentials").read_text().strip()
    assert f"password: {password}" in out
    users = get_user_model().objects.filter(username__in=demo_setup.ROLES)
    assert users.count() == 4
    for user in users:
        validate_password(password, user)
        assert authenticate(RequestFactory().post("/admin/login/"), username=user.username, password=password) == user

