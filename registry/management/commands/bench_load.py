"""manage.py bench_load --prompts N --resources M [--seed 42]

Loads the synthetic registry of the benchmark harness (naming convention in the bench README),
published to production, fast enough for thousands of entries: rows, versions and labels go in
with bulk_create, versions carry snapshots built directly in the `registry.authoring.snapshots` shapes,
each kind gets one summarising audit row, and one change-log row per kind tells running
servers to reload.

  prompts    prompt-00000 ..   required arguments topic and audience; 2 messages (user, assistant),
                               the user text starts with "[prompt-XXXXX] "; ~0.5 KB each
  resources  docs://doc-00000 ..   text/markdown, ~2 KB, text starts with "# doc-XXXXX v1\\n"
             docs://blob-00000     application/octet-stream, 1024 bytes
  template   docs://by-tag/{tag}   text/plain, echoes the tag
  --blobs B  docs://big-00000 ..   application/octet-stream, 4 MiB of seeded random bytes each

Re-running KEEPS what exists: entries whose name or URI is already taken are left as they are
(whatever their content or seed) and only missing ones are added, so the same N twice is a
no-op and a larger N tops up. Names do not depend on the seed; contents do.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from registry.audit import write_audit
from registry.authoring.listing import listing_of
from registry.authoring.snapshots import Payloads, content_hash, snapshot_resource, store_payloads
from registry.changes import service_scope
from registry.kinds import KINDS
from registry.models import (
    PRODUCTION,
    AuditAction,
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceTemplate,
    TemplateVariable,
)

ACTOR = "bench_load"
TAGS = "bench, synthetic"
SNAPSHOT_TAGS = sorted(t.strip() for t in TAGS.split(","))  # as registry.authoring.snapshots records them
AUDIENCES = ["engineers", "executives", "students", "support", "auditors", "designers"]
TOPICS = ["billing", "onboarding", "security", "latency", "caching", "search", "privacy", "migrations"]
VOCABULARY = [
    "the", "a", "of", "to", "and", "for", "with", "when", "each", "every", "cache", "latency", "request",
    "index", "shard", "replica", "queue", "worker", "deploy", "rollback", "review", "checklist", "incident",
    "owner", "budget", "metric", "alert", "dashboard", "tenant", "account", "invoice", "policy", "consent",
    "export", "retention", "audit", "schema", "column", "migration", "backfill", "window", "batch", "retry",
    "timeout", "quota", "region", "failover", "handshake", "token", "session", "cursor", "pagination",
    "ranking", "query", "filter", "facet", "summary", "clearly", "briefly", "carefully", "first", "then",
    "finally", "because", "although", "therefore",
]
TAG_WORDS = ["alpha", "beta", "release", "howto", "reference", "faq", "runbook", "design"]
BLOB_URI = "docs://blob-00000"
TEMPLATE_URI = "docs://by-tag/{tag}"
BATCH = 500
BIG_BLOB_BYTES = 4 * 1024 * 1024


def words(rng: random.Random, nbytes: int) -> str:
    out: list[str] = []
    size = 0
    while size < nbytes:
        word = rng.choice(VOCABULARY)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def prompt_name(i: int) -> str:
    return f"prompt-{i:05d}"


def doc_uri(i: int) -> str:
    return f"docs://doc-{i:05d}"


def _publish_rows(kind_name: str, entries: list[Any], snapshots: list[dict[str, Any]]) -> None:
    """Version 1 and a production label for each new entry (snapshots in entry order)."""
    kind = KINDS[kind_name]
    if entries and entries[0].pk is None:
        raise CommandError("This database does not return ids from bulk inserts (SQLite 3.35+ or PostgreSQL needed).")
    versions = kind.version_model.objects.bulk_create(
        [kind.version_model(entry=entry, number=1, snapshot=snap, content_hash=content_hash(snap),
                            listing=listing_of(kind_name, snap), change_note="Synthetic benchmark data",
                            author_name=ACTOR)
         for entry, snap in zip(entries, snapshots, strict=True)],
        batch_size=BATCH,
    )
    kind.label_model.objects.bulk_create(
        [kind.label_model(entry=entry, version=version, name=PRODUCTION, protected=True, moved_by=ACTOR)
         for entry, version in zip(entries, versions, strict=True)],
        batch_size=BATCH,
    )


def _summarise(kind: str, keys: list[str], note: str) -> None:
    if not keys:
        return
    span = keys[0] if len(keys) == 1 else f"{keys[0]} … {keys[-1]}"
    # The production labels' bulk_create is recorded in the change log by registry.release.receivers ("*").
    write_audit(actor=ACTOR, action=AuditAction.PUBLISH, entry_kind=kind, entry_key=f"{span} ({len(keys)} new)",
                to_version=1, label=PRODUCTION, note=note)


def synthetic_prompts(n: int, seed: int) -> list[tuple[str, str, str, str]]:
    """[(name, description, user text, assistant text)]; same seed, same contents."""
    rng = random.Random(f"{seed}:bench-prompts")
    out = []
    for i in range(n):
        name = prompt_name(i)
        description = f"Synthetic prompt {i}: " + words(rng, 60)
        user = f"[{name}] Write about {{{{ topic }}}} for {{{{ audience }}}}. " + words(rng, 440)
        assistant = "Understood: {{ topic }} for {{ audience }}. " + words(rng, 460)
        out.append((name, description, user, assistant))
    return out


def synthetic_docs(m: int, seed: int) -> list[tuple[str, str]]:
    """[(uri, text)] of the text resources at version 1."""
    rng = random.Random(f"{seed}:bench-resources")
    out = []
    for i in range(m):
        uri = doc_uri(i)
        out.append((uri, f"# {uri.split('//', 1)[1]} v1\n" + words(rng, 2000)))
    return out


def load_prompts(n: int, seed: int, note: str) -> int:
    existing = set(Prompt.objects.filter(name__startswith="prompt-").values_list("name", flat=True))
    rows, contents = [], []
    for name, description, user, assistant in synthetic_prompts(n, seed):
        if name in existing:
            continue
        rows.append(Prompt(name=name, description=description, tags=TAGS))
        contents.append((user, assistant))
    prompts = Prompt.objects.bulk_create(rows, batch_size=BATCH)
    arguments: list[dict[str, Any]] = [
        {"name": "topic", "description": "What to write about", "required": True, "suggestions": TOPICS},
        {"name": "audience", "description": "Who it is for", "required": True, "suggestions": AUDIENCES},
    ]
    PromptArgument.objects.bulk_create(
        [PromptArgument(prompt=p, position=pos, name=a["name"], description=a["description"], required=True,
                        suggestions="\n".join(a["suggestions"]))
         for p in prompts for pos, a in enumerate(arguments)],
        batch_size=BATCH,
    )
    PromptMessage.objects.bulk_create(
        [PromptMessage(prompt=p, position=pos, role=role, kind="text", text=text)
         for p, (user, assistant) in zip(prompts, contents, strict=True)
         for pos, (role, text) in enumerate((("user", user), ("assistant", assistant)))],
        batch_size=BATCH,
    )
    snapshots = [
        {"name": p.name, "description": p.description, "arguments": arguments, "tags": SNAPSHOT_TAGS,
         "messages": [{"role": "user", "content": {"type": "text", "text": user}},
                      {"role": "assistant", "content": {"type": "text", "text": assistant}}]}
        for p, (user, assistant) in zip(prompts, contents, strict=True)
    ]
    _publish_rows("prompt", prompts, snapshots)
    _summarise("prompt", [p.name for p in prompts], note)
    return len(prompts)


def _resource_snapshot(r: Resource) -> dict[str, Any]:
    """The published snapshot, its text put into the content store first (as publish does)."""
    payloads: Payloads = {}
    snap = snapshot_resource(r, payloads)
    store_payloads(payloads)
    return snap


def load_resources(m: int, seed: int, note: str) -> int:
    existing = set(Resource.objects.filter(uri__startswith="docs://").values_list("uri", flat=True))
    rows = []
    for i, (uri, text) in enumerate(synthetic_docs(m, seed)):
        if uri in existing:
            continue
        rows.append(Resource(uri=uri, name=uri.split("//", 1)[1], description=f"Synthetic document {i}",
                             mime_type="text/markdown", text=text, tags=TAGS))
    if BLOB_URI not in existing:
        blob = random.Random(f"{seed}:bench-blob").randbytes(1024)
        rows.append(Resource(  # type: ignore[misc]  # `data` is a property Model() sets
            uri=BLOB_URI, name="blob-00000", description="Synthetic binary document",
            mime_type="application/octet-stream", data=blob, tags=TAGS))
    for row in rows:
        row.store_pending()  # uploaded bytes go to the content store before the rows
    resources = Resource.objects.bulk_create(rows, batch_size=BATCH)
    _publish_rows("resource", resources, [_resource_snapshot(r) for r in resources])
    _summarise("resource", [r.uri for r in resources], note)
    return len(resources)


def load_blobs(b: int, seed: int, note: str) -> int:
    """B large binary resources (bench/scale.py reads them through the endpoint)."""
    existing = set(Resource.objects.filter(uri__startswith="docs://big-").values_list("uri", flat=True))
    added = 0
    for i in range(b):
        uri = f"docs://big-{i:05d}"
        if uri in existing:
            continue
        data = random.Random(f"{seed}:bench-big:{i}").randbytes(BIG_BLOB_BYTES)
        resource = Resource.objects.create(
            uri=uri, name=f"big-{i:05d}", description="Synthetic 4 MiB blob", mime_type="application/octet-stream",
            data=data, tags=TAGS)
        _publish_rows("resource", [resource], [_resource_snapshot(resource)])  # one at a time: bounded memory
        added += 1
    if added:
        _summarise("resource", [f"docs://big-{i:05d}" for i in range(b)], note)
    return added


def load_template(note: str) -> int:
    if ResourceTemplate.objects.filter(uri_template=TEMPLATE_URI).exists():
        return 0
    template = ResourceTemplate.objects.create(
        uri_template=TEMPLATE_URI, name="by-tag", description="Synthetic documents with a given tag",
        mime_type="text/plain", body="documents tagged {{ tag }}: synthetic listing for {{ tag }}", tags=TAGS,
    )
    TemplateVariable.objects.create(template=template, name="tag", suggestions="\n".join(TAG_WORDS))
    snapshot = {"uriTemplate": template.uri_template, "name": template.name, "description": template.description,
                "mimeType": template.mime_type, "body": template.body,
                "variables": [{"name": "tag", "suggestions": TAG_WORDS}], "tags": SNAPSHOT_TAGS}
    _publish_rows("template", [template], [snapshot])
    _summarise("template", [template.uri_template], note)
    return 1


class Command(BaseCommand):
    help = "Load the synthetic benchmark registry, published to production (existing entries are kept)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--prompts", type=int, required=True, metavar="N")
        parser.add_argument("--resources", type=int, required=True, metavar="M")
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--blobs", type=int, default=0, metavar="B", help="also B resources of 4 MiB each")

    def handle(self, *args: Any, prompts: int, resources: int, seed: int, blobs: int = 0, **options: Any) -> None:
        if prompts < 0 or resources < 0 or max(prompts, resources) > 100_000:
            raise CommandError("--prompts and --resources must be between 0 and 100000.")
        if not 0 <= blobs <= 1000:
            raise CommandError("--blobs must be between 0 and 1000.")
        note = f"bench_load --prompts {prompts} --resources {resources} --seed {seed}"
        started = time.monotonic()
        steps: list[tuple[str, Callable[[], int]]] = [
            ("prompts", lambda: load_prompts(prompts, seed, note)),
            ("resources", lambda: load_resources(resources, seed, note)),
            ("templates", lambda: load_template(note)),
            ("blobs", lambda: load_blobs(blobs, seed, note)),
        ]
        added = {}
        # It audits and records its own summary rows, like a service: one per kind.
        with service_scope(durable=True):
            for label, step in steps:
                added[label] = step()
        elapsed = time.monotonic() - started
        self.stdout.write(
            f"added {added['prompts']} prompts, {added['resources']} resources, {added['templates']} template"
            + (f", {added['blobs']} blobs of 4 MiB" if blobs else "") + " "
            f"(published to {PRODUCTION}; existing entries kept) in {elapsed:.1f} s"
        )
