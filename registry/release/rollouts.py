"""Staged and percentage rollout: serve a candidate version of an entry to part of a label's clients.

Which clients: `stable_bucket(client_name, entry_key)` (SHA-256, 0-99, the same in every
process and after restarts) below the percentage get the candidate, the rest the version the
label points at; anonymous callers always get the label's version. A client therefore keeps
its version until the percentage changes, and raising the percentage only adds clients.

Rules (`set_rollout`, publisher permission):
- percent 1-99 starts or changes the rollout; 0 aborts it (the row is deleted, everybody gets
  the label's version again); 100 completes it: the label moves to the candidate (the normal
  `_point_label` path: label_move audit row, change log, notifications) and the row is deleted.
- Protected labels: STARTING a rollout (or changing its candidate version) exposes the
  candidate to real clients, so it needs the same authority as moving the label: an approved
  review that asked for the rollout (`reviews.request_publication(..., percent=N)`), or an
  audited emergency override (`override_reason` + permission; the command line is an automatic
  override). The rollout keeps that authority (`Rollout.authority`) for exactly the move it was
  granted: changing the percentage of the same candidate and completing it at 100 need only the
  publisher permission while the label still serves `Rollout.base_version`.
- Any label move ends every rollout running on that label (`services._point_label`), so a
  partial rollout approved against v3 cannot outlive a later full release of v4 and then be
  "completed" as an unreviewed move back to v3. Aborting (0) is always allowed to publishers: it only
  returns clients to the version the label already serves.
- Every change is audited as `rollout_changed` (the candidate version and the share, before and
  after: `models.reviews.rollout_diff`) and recorded in the change log for the entry and label
  (list_changed), so clients are notified like for any other change.
- Concurrent changes: each state of a label's rollout has an entity tag (`rollout_state`, the
  API's ETag). A caller that names the state it read (`if_match`, or `if_none_match` for "only if
  none runs") is refused with RolloutConflict when it changed meanwhile; one that names none may
  still not replace a running rollout of another candidate (`replace=False`, the API's default
  without If-Match): two publishers starting different candidates at once never silently undo
  each other. The check runs under the entry's row lock, so of two concurrent requests the
  second sees the first's result.
- Snippets: a snippet's rollout serves its candidate inside every entry that follows the snippet
  on that label, to the clients whose bucket by the snippet's name is in the share (so a client
  gets the candidate in all of them or in none; registry/serving/catalogs.py). One rollout per
  served entry at a time (`_crossing`): a snippet's rollout is refused while a dependent runs its
  own, or follows another snippet rolling out there, and an entry's rollout while it follows a
  snippet rolling out on that label; the refusal lists them.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from registry.audit import User, actor_name, user_row, write_audit
from registry.changes import service_transaction
from registry.errors import InvalidRollout, RolloutConflict
from registry.kinds import kind_of
from registry.models import AuditAction, EntryVersion, ReleaseLabel, Rollout, VersionedEntry
from registry.models.base import label_name_validator, served_key_of
from registry.models.reviews import rollout_diff
from registry.release import argument_guard, services


def rollout_of(entry: VersionedEntry, label: str) -> Rollout | None:
    return Rollout.objects.filter(entry_kind=entry.kind, entry_id=entry.pk, label=label).first()


def rollout_state(rollout: Rollout | None, label_version: int | None) -> str:
    """The entity tag of a label's rollout state: the running rollout (candidate, share, base,
    authority, last change) or none, and the version the label serves. Any change, by any path,
    changes it (`updated_at` moves on every save)."""
    if rollout is None:
        basis = f"none|{label_version}"
    else:
        changed = rollout.updated_at.isoformat() if rollout.updated_at else ""
        basis = (f"{rollout.candidate_version}|{rollout.percent}|{rollout.base_version}|{rollout.authority}|"
                 f"{changed}|{label_version}")
    return hashlib.sha256(basis.encode()).hexdigest()[:20]


def state_of(entry: VersionedEntry, label: str) -> str:
    """`rollout_state` of `label` on `entry` as stored now (for a read's ETag)."""
    version = (kind_of(entry).label_model.objects.filter(entry=entry, name=label)
               .values_list("version__number", flat=True).first())
    return rollout_state(rollout_of(entry, label), version)


def _describe(rollout: Rollout | None) -> str:
    if rollout is None:
        return _("no rollout runs")
    return (_("v%(number)s is rolling out to %(percent)s%% of the clients (last changed by %(name)s)")
            % {"number": rollout.candidate_version, "percent": rollout.percent, "name": rollout.updated_by_name})


def _check_precondition(existing: Rollout | None, label: str, label_version: int, *, version_number: int,
                        percent: int, if_match: str | None, if_none_match: bool, replace: bool) -> None:
    current = rollout_state(existing, label_version)
    running = _describe(existing)
    if if_none_match and existing is not None:
        raise RolloutConflict(_("A rollout runs on '%(label)s' already: %(running)s. Nothing was changed.")
                              % {"label": label, "running": running}, current_state=current, precondition=True)
    if if_match == "*" and existing is None:
        raise RolloutConflict(_("No rollout runs on '%(label)s' any more. Nothing was changed.") % {"label": label},
                              current_state=current, precondition=True)
    if if_match not in (None, "*", current):
        raise RolloutConflict(_("The rollout on '%(label)s' changed since you read it: %(running)s. Nothing was "
                                "changed; look again and decide.") % {"label": label, "running": running},
                              current_state=current, precondition=True)
    if (not replace and if_match is None and existing is not None and percent != 0
            and existing.candidate_version != version_number):
        raise RolloutConflict(_("A rollout of another version runs on '%(label)s': %(running)s. Replacing it with "
                                "v%(number)s needs the state you saw (send If-Match with its ETag). Nothing was "
                                "changed.") % {"label": label, "running": running, "number": version_number},
                              current_state=current, precondition=False)


def _check_percent(percent: object) -> int:
    if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
        raise InvalidRollout(_("The rollout percentage must be a whole number from 0 to 100, not %(percent)r: "
                               "0 aborts the rollout, 100 completes it.") % {"percent": percent})
    return percent


def _inherited_authority(existing: Rollout | None, version_number: int, label_version: int) -> str:
    """The authority a running rollout passes on: only to its own candidate, from the version it started on."""
    if (existing is not None and existing.candidate_version == version_number and existing.authority
            and existing.base_version == label_version):
        return existing.authority
    return ""


def needs_review(label_row: ReleaseLabel, running: Rollout | None, version_number: int) -> bool:
    """Whether a publisher's rollout of `version_number` on `label_row` (any share, 100 included) would be
    refused for want of an approval, without an override: the rule `set_rollout` applies. The admin
    asks it before offering a one-click rollout, so it offers only what would be done."""
    if not _protected(label_row.entry, label_row):
        return False
    return not _inherited_authority(running, version_number, label_row.version.number)


def _protected(entry: VersionedEntry, label_row: ReleaseLabel) -> bool:
    """Whether exposing a candidate on `label_row` needs the authority of moving the label: its own
    flag, or for a snippet a protected row of a dependent it would change (`services.is_protected`,
    the rule of a snippet's label move)."""
    return label_row.protected or (entry.kind == "snippet" and services.is_protected(entry, label_row.name))


def _crossing(entry: VersionedEntry, label: str, candidate: EntryVersion | None = None) -> list[str]:
    """What a new rollout of `entry` on `label` would cross: the rollouts that would split the same
    entries' clients a second way ("prompt greet on 'staging'", ...), each once. Empty: none.
    `candidate`: the version an entry's rollout would serve, judged with the one the label serves."""
    from registry.release.uses import dependents, reaching

    running = list(Rollout.objects.exclude(entry_kind=entry.kind, entry_id=entry.pk).values_list(
        "entry_kind", "entry_id", "entry_key", "label"))
    if not running:
        return []
    found: dict[str, None] = {}
    if entry.kind == "snippet":
        reached = dependents(entry.key, label)
        rows = {(kind, key, name) for kind, key, name in reached}
        ids = _entry_ids(reached)
        for kind, entry_id, key, rollout_label in running:
            if kind == "snippet":
                if rows & set(dependents(key, rollout_label)):
                    found[_("snippet %(name)s on '%(label)s'") % {"name": key, "label": rollout_label}] = None
            elif (kind, entry_id, rollout_label) in ids:
                found[_("%(kind)s %(key)s on '%(label)s'") % {"kind": kind, "key": key, "label": rollout_label}] = None
        return list(found)
    for kind, _entry_id, key, rollout_label in running:
        if kind != "snippet":
            continue
        if (entry.kind, entry.key, label) in dependents(key, rollout_label) or (
                candidate is not None and _reaches(entry.kind, candidate, reaching([key]))):
            found[_("snippet %(name)s on '%(label)s'") % {"name": key, "label": rollout_label}] = None
    return list(found)


def _reaches(kind: str, version: EntryVersion, reach: Any) -> bool:
    """Whether `version` (of an entry of `kind`) reaches the snippets of `reach` (its EntryUse rows)."""
    from registry.models import EntryUse

    return EntryUse.objects.filter(reach.uses(), user_kind=kind, user_version_id=version.pk).exists()


def _entry_ids(rows: list[tuple[str, str, str]]) -> set[tuple[str, int, str]]:
    """(kind, entry id, label name) of dependents' (kind, key, label name) rows."""
    from registry.kinds import KINDS

    out: set[tuple[str, int, str]] = set()
    for kind in sorted({kind for kind, _key, _name in rows}):
        spec = KINDS[kind]
        keys = {key for k, key, _name in rows if k == kind}
        ids = dict(spec.entry_model.objects.filter(**{f"{spec.key_field}__in": sorted(keys)}).values_list(
            spec.key_field, "pk"))
        out |= {(kind, ids[key], name) for k, key, name in rows if k == kind and key in ids}
    return out


def refuse_crossing(entry: VersionedEntry, label: str, candidate: EntryVersion | None = None) -> None:
    """Refuse starting a rollout of `entry` on `label` (of `candidate`) that another rollout would
    cross (`_crossing`)."""
    crossed = _crossing(entry, label, candidate if entry.kind != "snippet" else None)
    if crossed:
        raise InvalidRollout(_("Another rollout already splits the clients of the entries this one would change: "
                               "%(rollouts)s. Complete or stop it first, so each client is served one candidate.")
                             % {"rollouts": ", ".join(crossed[:20])})


@service_transaction
def set_rollout(
    entry: VersionedEntry,
    *,
    label: str,
    version_number: int,
    percent: int,
    acting_user: User,
    note: str = "",
    override_reason: str | None = None,
    if_match: str | None = None,
    if_none_match: bool = False,
    replace: bool = True,
    actor: str | None = None,
) -> Rollout | None:
    """Start, change, complete (100) or abort (0) the rollout of `version_number` on `label`.

    `if_match`: the `rollout_state` the caller read ("*": any running rollout); `if_none_match`:
    only when no rollout runs; `replace=False`: refuse to replace a running rollout of another
    candidate unless `if_match` names it (see the module doc). Returns the running rollout, or
    None once it is completed or aborted.
    """
    services.require_publisher(acting_user, entry)
    percent = _check_percent(percent)
    try:
        label_name_validator(label)
    except ValidationError as exc:
        raise InvalidRollout("; ".join(exc.messages)) from exc
    note = (note or "").strip()
    entry = services._lock(entry)
    current = kind_of(entry).label_model.objects.filter(entry=entry, name=label).select_related("version").first()
    if current is None:
        raise InvalidRollout(_("%(key)s has no '%(label)s' label yet: publish to it before rolling out to part of "
                               "it.") % {"key": entry.key, "label": label})
    version = entry.versions.filter(number=version_number).first()
    if version is None:
        raise InvalidRollout(_("%(key)s has no version %(number)s.") % {"key": entry.key, "number": version_number})
    existing = Rollout.objects.select_for_update().filter(entry_kind=entry.kind, entry_id=entry.pk, label=label).first()
    _check_precondition(existing, label, current.version.number, version_number=version_number, percent=percent,
                        if_match=if_match, if_none_match=if_none_match, replace=replace)
    before = (existing.candidate_version, existing.percent) if existing else (None, 0)

    def audit(after: tuple[int | None, int], what: str, *, was: tuple[int | None, int] = before) -> None:
        write_audit(
            entry=entry, action=AuditAction.ROLLOUT_CHANGED, acting_user=acting_user, actor=actor, label=label,
            note=f"{what}" + (f": {note}" if note else ""),
            from_version=current.version.number, to_version=version.number,
            changes=rollout_diff(was, after),
        )

    if percent == 0:
        if existing is None:
            return None
        existing.delete()
        audit((None, 0), f"Aborted the rollout of v{existing.candidate_version} on '{label}'")
        return None

    if current.version.number == version.number:
        raise InvalidRollout(_("'%(label)s' already serves v%(number)s of %(key)s to every client.")
                             % {"label": label, "number": version.number, "key": entry.key})
    unfillable = argument_guard.release_refusal(entry, label, version)
    if unfillable:
        raise InvalidRollout(" ".join(unfillable))

    served, candidate = (served_key_of(v.listing, v.snapshot) for v in (current.version, version))
    if percent < 100 and candidate != served:
        # Clients in the rollout would list the candidate's name yet be served it under the label's
        # (gets, reads and list cursors go by that one): a rename moves the label in full.
        raise InvalidRollout(_("v%(number)s of %(key)s is served as %(candidate)s, not %(served)s: a rollout cannot "
                               "rename, since clients in it would list one name and ask for another. Move the "
                               "label to it in full (100%%) instead.")
                             % {"number": version.number, "key": entry.key, "candidate": candidate, "served": served})

    same_candidate = existing is not None and existing.candidate_version == version.number
    # The authority a rollout keeps covers exactly the move it was granted: this candidate, on this
    # label, from the version the label served when it started. Anything else needs a new one.
    inherited = _inherited_authority(existing, version.number, current.version.number)
    if percent == 100:
        if existing is not None and not same_candidate:
            existing.delete()  # a different candidate is completed directly: the old rollout ends
            audit((None, 0), f"Ended the rollout of v{existing.candidate_version} on '{label}'")
        # _point_label audits the completion and ends the rollout with the move.
        if inherited:
            with services.approved_move(entry, label, reference=inherited):
                services._point_label(entry, label, version, acting_user=acting_user, actor=actor, note=note,
                                      override_reason=override_reason)
        else:
            services._point_label(entry, label, version, acting_user=acting_user, actor=actor, note=note,
                                  override_reason=override_reason)
        return None

    if not same_candidate:  # a new candidate may reach other snippets, or be reached by them
        refuse_crossing(entry, label, version)
    if inherited:
        authority = inherited
    else:
        authority = services.authorise_protected(
            entry, label, protected=_protected(entry, current), acting_user=acting_user,
            override_reason=override_reason, actor=actor, from_version=current.version.number,
            to_version=version.number,
        )
    rollout = existing or Rollout(entry_kind=entry.kind, entry_id=entry.pk, label=label)
    rollout.entry_key = entry.key
    rollout.candidate_version = version.number
    rollout.percent = percent
    rollout.base_version = current.version.number
    rollout.authority = authority[:200]
    rollout.note = note
    rollout.updated_by = user_row(acting_user)
    rollout.updated_by_name = actor or actor_name(acting_user)
    rollout.save()
    if existing is None:
        what = f"Started rolling out v{version.number} on '{label}' to {percent}% of clients"
    elif not same_candidate:
        what = f"Switched the rollout on '{label}' to v{version.number} at {percent}% of clients"
    else:
        what = f"Rollout of v{version.number} on '{label}' now at {percent}% of clients"
    audit((version.number, percent), what)
    return rollout
