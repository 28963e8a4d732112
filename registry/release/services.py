"""Write side: every publish, label move, rollback, archive and audited draft change.

Each service runs in one transaction together with its audit rows, checks the acting user's
permission itself (so the admin, the API, imports and any crafted request meet the same rule),
and saves the models; the model-save receivers (registry.release.receivers) record what the saves change
in the change log, as they do for every save, and `changes` announces it after commit. Each
runs as a `changes.service_transaction`, so the receivers leave the auditing to it.
`acting_user=None` means a trusted operator at the command line.

Protected labels (four eyes). `_point_label` is the one place a label moves or is created.
When the label row is protected (labels named in settings.REGISTRY["PROTECTED_LABELS"],
default ["production"], are created protected) the move needs ONE of:

1. an approval: only `registry.release.reviews.approve` (and a rollout that an approval started,
   see `registry.release.rollouts`) opens the internal `approved_move` context for that entry and label;
2. an explicit emergency override: `publish`, `move_label` and `rollback` take
   `override_reason`; the acting user must hold `registry.override_protected_labels` (no role
   group has it; superusers have every permission, but must still pass the reason, so a
   superuser's plain API call or import cannot move production). It is audited as an
   `override` row naming who and why, next to the usual label_move/rollback row;
3. an incident rollback (`rollback` only): a publisher may put the label back on a version
   it served before AND that is older than the one it serves now, with the note as the reason,
   audited as `incident_rollback` (`is_incident_rollback` is that rule; the admin asks it too).
   `rollback` never moves a label forward: a target that is not older is refused
   (NotAnOlderVersion) on every label, since going forward is a label move, reviewed where protected;
4. the command line (`acting_user=None`): the operator has shell and database access anyway,
   so it is treated as an automatic override and audited with the reason
   "command line (operator)" (this is how `registry_import --publish` bootstraps a registry).

Anything else raises `ApprovalRequired`, and the whole transaction (including a version the
same call would have published) is rolled back, so a label never serves what nobody approved.
A snippet's label move changes what its dependents serve (registry/release/uses.py): when one of
their label rows is protected, the snippet's move is protected too (`protected_dependents`), so
releasing a shared part needs the same review as changing those entries directly, and the audit
row of the move names the dependents it changed.
`set_label_protected` changes a label row's flag; it needs the override permission and a
reason, and is audited as an override.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from registry import refusals, roles
from registry.audit import User, actor_name, user_row, write_audit
from registry.authoring.listing import listing_of
from registry.authoring.snapshots import Payloads, content_hash, diff_snapshots, snapshot_of, store_payloads
from registry.authoring.validation import validate_entry
from registry.changes import service_transaction
from registry.conf import registry_settings
from registry.errors import (
    ApprovalRequired,
    InvalidEntry,
    NotAnOlderVersion,
    NothingToPublish,
    PublishPermissionDenied,
    RegistryError,
)
from registry.kinds import KINDS, kind_of
from registry.models import (
    PRODUCTION,
    AuditAction,
    EntryVersion,
    ReleaseLabel,
    ReviewRequest,
    ReviewStatus,
    Rollout,
    Snippet,
    VersionedEntry,
)
from registry.models.base import label_name_validator
from registry.models.reviews import rollout_diff
from registry.release import argument_guard, uses
from registry.serving import label_history

OVERRIDE_PERMISSION = "registry.override_protected_labels"
OPERATOR_OVERRIDE = "command line (operator)"

def can_publish(user: User, entry: VersionedEntry) -> bool:
    """A publisher of the entry's kind who, if its folder has an owning team, is in it (registry.roles):
    the one rule for publishing, moving labels, rolling back, rollouts and deciding reviews."""
    if user is None:
        return True
    return bool(user.is_active and user.has_perm(kind_of(entry).publish_permission)
                and roles.in_owning_team(user, entry.folder))


def publishers_of(entry: VersionedEntry) -> list[Any]:
    """The active users who may publish `entry` (`can_publish` is the rule; the query only narrows
    the candidates to those holding the permission through a group, directly or as superusers)."""
    from django.contrib.auth import get_user_model

    candidates = get_user_model().objects.with_perm(
        kind_of(entry).publish_permission, is_active=True, include_superusers=True,
        backend="django.contrib.auth.backends.ModelBackend")
    return [user for user in candidates.order_by("pk") if can_publish(user, entry)]


def require_publisher(user: User, entry: VersionedEntry) -> None:
    if user is not None and user.is_active and user.has_perm(kind_of(entry).publish_permission):
        refusal = roles.folder_refusal(user, [entry.folder], deciding=True, entry=entry)
        if refusal is not None:
            raise refusal
    if not can_publish(user, entry):
        raise refusals.attach(PublishPermissionDenied(
            _("%(user)s may edit drafts but not publish, move labels or roll back %(kind)ss.")
            % {"user": actor_name(user), "kind": entry.kind}
        ), user=user, entry=entry, attempted="publish")


def can_override(user: User) -> bool:
    """May use the emergency override of protected labels (the operator at the command line may)."""
    if user is None:
        return True
    return bool(user.is_active and user.has_perm(OVERRIDE_PERMISSION))


def protected_label_names() -> frozenset[str]:
    """Labels that are created protected (settings.REGISTRY["PROTECTED_LABELS"], default production)."""
    return frozenset(registry_settings.PROTECTED_LABELS)


def is_protected(entry: VersionedEntry, label: str) -> bool:
    """Whether moving `label` of `entry` needs an approval: the row's flag, or the setting for a new label;
    for a snippet also a protected label row of a dependent the move changes."""
    row = kind_of(entry).label_model.objects.filter(entry=entry, name=label).only("protected").first()
    own = row.protected if row is not None else label in protected_label_names()
    return own or bool(isinstance(entry, Snippet) and protected_dependents(entry, label))


def protected_dependents(snippet: VersionedEntry, label: str,
                         dependents: list[tuple[str, str, str]] | None = None) -> list[tuple[str, str, str]]:
    """The (kind, key, label) rows among the snippet's dependents on `label` that are protected:
    a move of the snippet's label changes what they serve, so it needs their review."""
    found = uses.dependents(snippet.key, label) if dependents is None else dependents
    by_kind: dict[str, set[tuple[str, str]]] = {}
    for kind, key, name in found:
        by_kind.setdefault(kind, set()).add((key, name))
    protected: set[tuple[str, str, str]] = set()
    for kind, rows in by_kind.items():
        spec = KINDS[kind]
        key_path = f"entry__{spec.key_field}"
        for key, name in spec.label_model.objects.filter(
                **{f"{key_path}__in": {k for k, _n in rows}}, name__in={n for _k, n in rows},
                protected=True).values_list(key_path, "name"):
            if (key, name) in rows:
                protected.add((kind, key, name))
    return sorted(protected)


def dependents_note(dependents: list[tuple[str, str, str]], limit: int = 20) -> str:
    """'Changes what 3 dependents serve: prompt support-reply (production), ...' for the audit row."""
    if not dependents:
        return ""
    named = ", ".join(f"{kind} {key} ({label})" for kind, key, label in dependents[:limit])
    more = f" and {len(dependents) - limit} more" if len(dependents) > limit else ""
    return f"Changes what {len(dependents)} dependent(s) serve: {named}{more}."


# (kind, entry pk, label) -> what authorised it, e.g. "review #12"; set only by reviews/rollouts.
_approved: ContextVar[Mapping[tuple[str, int, str], str]] = ContextVar(
    "registry_approved_moves", default=MappingProxyType({})
)


@contextmanager
def approved_move(entry: VersionedEntry, label: str, *, reference: str) -> Iterator[None]:
    """INTERNAL: inside this block `label` of `entry` may move; only an approval may open it."""
    token = _approved.set({**_approved.get(), (entry.kind, entry.pk, label): reference})
    try:
        yield
    finally:
        _approved.reset(token)


def authorise_protected(
    entry: VersionedEntry,
    label: str,
    *,
    protected: bool,
    acting_user: User,
    override_reason: str | None,
    actor: str | None = None,
    from_version: int | None = None,
    to_version: int | None = None,
) -> str:
    """Check the right to change what protected `label` serves; returns the authority ('' if unprotected).

    Writes the `override` audit row when an override is used. Raises ApprovalRequired.
    """
    if not protected:
        return ""
    granted = _approved.get().get((entry.kind, entry.pk, label))
    if granted is not None:
        return granted
    reason = (override_reason or "").strip()
    if not reason and acting_user is None:
        reason = OPERATOR_OVERRIDE
    if not reason:
        raise refusals.attach(ApprovalRequired(
            _("'%(label)s' is a protected label of %(key)s: it moves only through an approved review "
              "(an editor requests publication, another publisher approves), or with an audited emergency "
              "override and a reason.") % {"label": label, "key": entry.key}
        ), user=acting_user, entry=entry, attempted="move_protected")
    if not can_override(acting_user):
        raise refusals.attach(PublishPermissionDenied(
            _("%(user)s may not use the emergency override of protected labels (permission %(permission)s); "
              "request a review instead.") % {"user": actor_name(acting_user), "permission": OVERRIDE_PERMISSION}
        ), user=acting_user, entry=entry, attempted="override")
    write_audit(entry=entry, action=AuditAction.OVERRIDE, acting_user=acting_user, actor=actor, note=reason,
                label=label, from_version=from_version, to_version=to_version)
    return f"override: {reason}"


def latest_version(entry: VersionedEntry) -> EntryVersion | None:
    return entry.versions.order_by("-number").first()


def _lock(entry: VersionedEntry) -> VersionedEntry:
    return type(entry).objects.select_for_update().get(pk=entry.pk)


@service_transaction
def publish(
    entry: VersionedEntry,
    *,
    acting_user: User,
    note: str,
    labels: Iterable[str] = (PRODUCTION,),
    actor: str | None = None,
    override_reason: str | None = None,
    on_behalf_of: User = None,
) -> EntryVersion:
    """Freeze the draft as version N+1 and point `labels` at it.

    Protected labels need an approval or `override_reason` (module docstring). `on_behalf_of`
    makes someone else the version's author: the requester, when a reviewer approves a request.
    """
    require_publisher(acting_user, entry)
    author = on_behalf_of if on_behalf_of is not None else acting_user
    note = (note or "").strip()
    if not note:
        raise InvalidEntry([_("A change note is required to publish: say what changed and why.")])
    entry = _lock(entry)
    report = validate_entry(entry)
    if not report.ok:
        raise InvalidEntry(report.errors)
    payloads: Payloads = {}
    snapshot = snapshot_of(entry, payloads)
    digest = content_hash(snapshot)
    previous = latest_version(entry)
    if previous is not None and previous.content_hash == digest:
        raise NothingToPublish(_("The draft of %(key)s is identical to v%(number)s; nothing to publish.")
                               % {"key": entry.key, "number": previous.number})
    store_payloads(payloads)  # bytes first: a storage failure rolls the publish back
    version = kind_of(entry).version_model.objects.create(
        entry=entry,
        number=(previous.number + 1) if previous else 1,
        parent=previous,
        snapshot=snapshot,
        listing=listing_of(entry.kind, snapshot),
        content_hash=digest,
        change_note=note,
        author=author if getattr(author, "pk", None) else None,
        # The requester is the author of what an approval publishes, whoever (or whatever) carries it out.
        author_name=actor_name(author) if on_behalf_of is not None else actor or actor_name(author),
    )
    write_audit(
        entry=entry, action=AuditAction.PUBLISH, acting_user=acting_user, actor=actor, note=note,
        from_version=previous.number if previous else None, to_version=version.number,
        changes=diff_snapshots(previous.snapshot if previous else None, snapshot),
    )
    for label in labels:
        _point_label(entry, label, version, acting_user=acting_user, actor=actor, note=note,
                     override_reason=override_reason)
    return version


def _point_label(
    entry: VersionedEntry,
    label: str,
    version: EntryVersion,
    *,
    acting_user: User,
    actor: str | None,
    note: str,
    action: str | None = None,
    override_reason: str | None = None,
) -> ReleaseLabel:
    label_name_validator(label)
    label_model = kind_of(entry).label_model
    current = label_model.objects.filter(entry=entry, name=label).select_related("version").first()
    before = current.version if current else None
    if before is not None and before.pk == version.pk:
        return current
    if current is None:
        current = label_model(entry=entry, name=label, protected=label in protected_label_names())
    dependents = uses.dependents(entry.key, label) if isinstance(entry, Snippet) else []
    unfillable = argument_guard.release_refusal(entry, label, version, dependents)
    if unfillable:
        raise InvalidEntry(unfillable)
    protected = current.protected or bool(dependents and protected_dependents(entry, label, dependents))
    authorise_protected(entry, label, protected=protected, acting_user=acting_user,
                        override_reason=override_reason, actor=actor,
                        from_version=before.number if before else None, to_version=version.number)
    _end_rollouts(entry, label, before, version, acting_user=acting_user, actor=actor)
    current.entry = entry  # no re-read of the locked entry
    current.version = version
    current.moved_by = actor or actor_name(acting_user)
    current.save()  # recorded in the change log by registry.release.receivers, as every label save is
    if action is None:
        rolled_back = before is not None and version.number < before.number
        action = AuditAction.ROLLBACK if rolled_back else AuditAction.LABEL_MOVE
    write_audit(
        entry=entry, action=action, acting_user=acting_user, actor=actor, label=label,
        note=" ".join(part for part in (note, dependents_note(dependents)) if part),
        from_version=before.number if before else None, to_version=version.number,
        changes=diff_snapshots(before.snapshot if before else None, version.snapshot),
    )
    _supersede_reviews(entry, label, version, acting_user=acting_user, actor=actor)
    return current


def _supersede_reviews(entry: VersionedEntry, label: str, version: EntryVersion, *, acting_user: User,
                       actor: str | None) -> None:
    """Close the pending requests for this label that the move just made stale, and tell their requesters.

    Each was asked against what the label served before, so none can be approved any more
    (reviews.approve would refuse it as stale); left pending they would wait forever. The audit
    row (and its webhook event) is how the requester hears of it. The request whose approval is
    making this very move is left for `reviews.approve` to close.
    """
    deciding = _approved.get().get((entry.kind, entry.pk, label))
    stale = ReviewRequest.objects.select_for_update().filter(
        entry_kind=entry.kind, entry_id=entry.pk, label=label, status=ReviewStatus.PENDING)
    for review in stale:
        if deciding == f"review #{review.pk}":
            continue
        review.status = ReviewStatus.SUPERSEDED
        review.decided_by = user_row(acting_user)
        review.decided_by_name = actor or actor_name(acting_user)
        review.decision_comment = (f"'{label}' moved to v{version.number} ({review.decided_by_name}) after this "
                                   "request, so it no longer describes what approving would do. Request again "
                                   "if it is still wanted.")
        review.decided_at = timezone.now()
        review.save()
        write_audit(entry=entry, action=AuditAction.REVIEW_SUPERSEDED, acting_user=acting_user, actor=actor,
                    label=label, from_version=review.base_version, to_version=version.number, review=review,
                    note=f"Review #{review.pk} by {review.requested_by_name} ({review.what}) superseded: "
                         + review.decision_comment)


def _end_rollouts(entry: VersionedEntry, label: str, before: EntryVersion | None, after: EntryVersion, *,
                  acting_user: User, actor: str | None) -> None:
    """A label move ends every rollout running on that label.

    A rollout (and the approval that started it) was granted against what the label served
    then: once the label serves something else, completing it or changing its share would be
    a move nobody approved (e.g. back to an older candidate after a newer full release). A
    rollout of the very version the label now serves is simply complete.
    """
    for rollout in Rollout.objects.select_for_update().filter(entry_kind=entry.kind, entry_id=entry.pk, label=label):
        complete = rollout.candidate_version == after.number
        if complete:
            what = f"Completed the rollout of v{after.number} on '{label}'"
        else:
            what = (f"Ended the rollout of v{rollout.candidate_version} at {rollout.percent}% on '{label}': "
                    f"the label moved to v{after.number}")
        write_audit(entry=entry, action=AuditAction.ROLLOUT_CHANGED, acting_user=acting_user, actor=actor,
                    label=label, note=what, from_version=before.number if before else None,
                    to_version=rollout.candidate_version,
                    changes=rollout_diff((rollout.candidate_version, rollout.percent),
                                         (rollout.candidate_version, 100) if complete else (None, 0)))
        rollout.delete()


@service_transaction
def move_label(
    entry: VersionedEntry,
    *,
    label: str,
    version_number: int,
    acting_user: User,
    note: str = "",
    actor: str | None = None,
    override_reason: str | None = None,
) -> ReleaseLabel:
    """Point `label` at an existing version: a rollout, or a rollback when it goes backwards."""
    require_publisher(acting_user, entry)
    entry = _lock(entry)
    version = entry.versions.filter(number=version_number).first()
    if version is None:
        raise RegistryError(_("%(key)s has no version %(number)s.") % {"key": entry.key, "number": version_number})
    return _point_label(entry, label, version, acting_user=acting_user, actor=actor, note=note,
                        override_reason=override_reason)


@service_transaction
def rollback(
    entry: VersionedEntry,
    *,
    acting_user: User,
    note: str,
    label: str = PRODUCTION,
    to_version: int | None = None,
    actor: str | None = None,
    override_reason: str | None = None,
) -> ReleaseLabel:
    """Point `label` back at `to_version` (older than what it serves now), or at the version before it.

    On a protected label a publisher alone may roll back to a version that label served before
    (an incident rollback, audited as such with the note as its reason); any other older target
    needs an approval or an override like every move of a protected label. A target that is not
    older is refused whoever asks: moving forward is `move_label` (or a review), never a rollback.
    """
    require_publisher(acting_user, entry)
    if not (note or "").strip():
        raise InvalidEntry([_("Say why you roll back: a note is required.")])
    entry = _lock(entry)
    current = kind_of(entry).label_model.objects.filter(entry=entry, name=label).select_related("version").first()
    if current is None:
        raise RegistryError(_("%(key)s has no '%(label)s' label to roll back.") % {"key": entry.key, "label": label})
    if to_version is None:
        older = entry.versions.filter(number__lt=current.version.number).order_by("-number").first()
        if older is None:
            raise RegistryError(_("'%(label)s' already serves the first version of %(key)s.")
                                % {"label": label, "key": entry.key})
        to_version = older.number
    version = entry.versions.filter(number=to_version).first()
    if version is None:
        raise RegistryError(_("%(key)s has no version %(number)s.") % {"key": entry.key, "number": to_version})
    if version.number >= current.version.number:
        raise NotAnOlderVersion(
            _("'%(label)s' of %(key)s serves v%(current)s; v%(number)s is not older, so rolling back to it would "
              "move the label forward. Move the label instead: on a protected label that needs an approved review "
              "(request one), or an audited emergency override.")
            % {"label": label, "key": entry.key, "current": current.version.number, "number": version.number}
        )
    note = note.strip()
    incident = (not (override_reason or "").strip() and (entry.kind, entry.pk, label) not in _approved.get()
                and _incident_rollback(entry, current, version.number))
    if not incident:
        return _point_label(entry, label, version, acting_user=acting_user, actor=actor, note=note,
                            action=AuditAction.ROLLBACK, override_reason=override_reason)
    # Incident rollback: one publisher may put a protected label back on a version it served before
    # (it was approved for this label then). The reason is required above; other publishers hear of
    # it through this audit row (webhook event, admin home page).
    write_audit(entry=entry, action=AuditAction.INCIDENT_ROLLBACK, acting_user=acting_user, actor=actor,
                label=label, note=note, from_version=current.version.number, to_version=version.number)
    with approved_move(entry, label, reference=f"incident rollback by {actor or actor_name(acting_user)}"):
        return _point_label(entry, label, version, acting_user=acting_user, actor=actor, note=note,
                            action=AuditAction.ROLLBACK)


def is_incident_rollback(entry: VersionedEntry, label: str, version_number: int) -> bool:
    """Whether one publisher alone may point `label` at `version_number` now (an incident rollback).

    Only on a protected label (elsewhere a publisher needs nobody), only backwards (older than the
    version it serves now) and only to a version it served before to every client.
    """
    current = kind_of(entry).label_model.objects.filter(entry=entry, name=label).select_related("version").first()
    return current is not None and _incident_rollback(entry, current, version_number)


def _incident_rollback(entry: VersionedEntry, current: ReleaseLabel, version_number: int) -> bool:
    return bool(current.protected and version_number < current.version.number
                and served_before(entry, label=current.name, version_number=version_number))


def served_before(entry: VersionedEntry, label: str, version_number: int) -> bool:
    """Whether `label` of `entry` once served `version_number` to every client (registry/serving/label_history.py)."""
    return label_history.served_before(entry.kind, entry.pk, label, version_number)


@service_transaction
def set_label_protected(
    entry: VersionedEntry, *, label: str, protected: bool, acting_user: User, reason: str
) -> ReleaseLabel:
    """Mark an existing label protected, or lift the protection (needs the override permission and a reason).

    Audited as an `override` row with the field change, since lifting protection is what an
    override does; adding protection needs the same permission so the flag has one owner.
    """
    require_publisher(acting_user, entry)
    reason = (reason or "").strip()
    if not reason:
        raise InvalidEntry([_("Say why the protection of the label changes: a reason is required.")])
    if not can_override(acting_user):
        raise refusals.attach(PublishPermissionDenied(
            _("%(user)s may not change label protection (permission %(permission)s).")
            % {"user": actor_name(acting_user), "permission": OVERRIDE_PERMISSION}
        ), user=acting_user, entry=entry, attempted="protect")
    entry = _lock(entry)
    row = kind_of(entry).label_model.objects.filter(entry=entry, name=label).select_related("version").first()
    if row is None:
        raise RegistryError(_("%(key)s has no '%(label)s' label.") % {"key": entry.key, "label": label})
    if row.protected == protected:
        return row
    row.protected = protected
    row.save(update_fields=["protected"])
    write_audit(entry=entry, action=AuditAction.OVERRIDE, acting_user=acting_user, label=label,
                note=f"{'Protected' if protected else 'Lifted the protection of'} '{label}': {reason}",
                changes=[{"field": "protected", "before": not protected, "after": protected}])
    return row


def _restore_problems(entry: VersionedEntry) -> list[str]:
    """What restoring `entry` would serve unfilled: while archived it was no snippet release's
    dependent (uses.dependents), so a snippet version its labels reach now may use an argument it
    lacks. Each label's version, and a running rollout's candidate, judged as a release of it."""
    problems: list[str] = []
    candidates = dict(Rollout.objects.filter(entry_kind=entry.kind, entry_id=entry.pk).values_list(
        "label", "candidate_version"))
    for row in entry.labels.select_related("version").order_by("name"):
        problems += argument_guard.release_refusal(entry, row.name, row.version)
        if row.name in candidates:
            candidate = entry.versions.filter(number=candidates[row.name]).first()
            if candidate is not None:
                problems += argument_guard.release_refusal(entry, row.name, candidate)
    return problems


@service_transaction
def set_archived(entry: VersionedEntry, *, archived: bool, acting_user: User, note: str = "") -> VersionedEntry:
    """Archive (stop serving, keep history) or restore an entry."""
    require_publisher(acting_user, entry)
    entry = _lock(entry)
    if bool(entry.archived_at) == archived:
        return entry
    if archived and isinstance(entry, Snippet):
        served = uses.served_users(entry.key)
        if served:
            raise InvalidEntry([_("%(key)s cannot be archived: published entries include it. Remove the reference "
                                  "from them and publish them first: %(users)s.")
                                % {"key": entry.key, "users": ", ".join(
                                    f"{u.kind} {u.key} v{u.version} ({', '.join(u.labels)})" for u in served)}])
    if not archived and not isinstance(entry, Snippet):
        unfillable = _restore_problems(entry)
        if unfillable:
            raise InvalidEntry([_("%(key)s cannot be restored as it is:") % {"key": entry.key}, *unfillable])
    entry.archived_at = timezone.now() if archived else None
    entry.save(update_fields=["archived_at", "updated_at"])
    write_audit(entry=entry, action=AuditAction.ARCHIVE if archived else AuditAction.UNARCHIVE,
                acting_user=acting_user, note=note)
    return entry
