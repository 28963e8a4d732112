"""One message, as its recipient reads it: subject, plain text and HTML in their language.

Rendered when the message is sent (registry/mail/sending.py), so it shows the request as the
event left it, with its whole discussion; in the recipient's saved language (their
EditorPreference, else LANGUAGE_CODE), times in the site's time zone with the zone named, and a
link to the page to act on (the review page; the history page for an incident rollback), made
absolute with REGISTRY["PUBLIC_URL"].
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from registry.conf import mcp_public_url, registry_settings
from registry.kinds import KINDS
from registry.models import AuditAction, EditorPreference, MailKind, MailMessage, ReviewRequest
from registry.release import discussion

SUBJECT_CHARS = 250
FALLBACK_ORIGIN = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Composed:
    language: str
    subject: str
    text: str
    html: str


def public_origin() -> str:
    """Where people reach the admin: REGISTRY["PUBLIC_URL"], else the origin of MCP_PUBLIC_URL."""
    own = (registry_settings.PUBLIC_URL or "").strip().rstrip("/")
    if own:
        return own
    parts = urlsplit(mcp_public_url())
    if parts.scheme and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return FALLBACK_ORIGIN


def absolute(path: str) -> str:
    return public_origin() + path


def language_of(user: Any) -> str:
    """The recipient's saved language (one of settings.LANGUAGES), else the site's."""
    code = EditorPreference.objects.filter(user_id=user.pk).values_list("language", flat=True).first()
    try:
        return translation.get_supported_language_variant(code.lower()) if code else settings.LANGUAGE_CODE
    except LookupError:
        return settings.LANGUAGE_CODE


def when_text(moment: datetime | None) -> str:
    if moment is None:
        return ""
    return f"{timezone.localtime(moment):%Y-%m-%d %H:%M} {timezone.get_current_timezone_name()}"


def _kind_name(kind: str) -> str:
    """'template' -> the model's name in the active language; unknown kinds as given."""
    return str(KINDS[kind].entry_model._meta.verbose_name) if kind in KINDS else kind


def _headline(message: MailMessage, review: ReviewRequest | None) -> str:
    audit = message.audit
    who = audit.actor_name
    if review is None:  # an incident rollback
        return (_("%(name)s rolled '%(label)s' of %(kind)s %(key)s back from v%(from)s to v%(to)s because of an "
                  "incident, without a second publisher.")
                % {"name": who, "label": audit.label, "kind": _kind_name(audit.entry_kind), "key": audit.entry_key,
                   "from": audit.from_version, "to": audit.to_version})
    facts = {"pk": review.pk, "name": who, "label": review.label, "key": review.entry_key,
             "kind": _kind_name(review.entry_kind), "what": review.what_text,
             "requester": review.requested_by_name}
    schedule = review.schedules.order_by("-created_at", "-id").first()
    facts["when"] = when_text(schedule.go_live_at) if schedule is not None else ""
    sentences: dict[str, str] = {
        AuditAction.REVIEW_REQUESTED: _("%(requester)s asks you to review #%(pk)s: %(what)s of %(kind)s %(key)s on "
                                        "'%(label)s'."),
        AuditAction.REVIEW_APPROVED: _("%(name)s approved your request #%(pk)s: %(what)s of %(key)s on '%(label)s'."),
        AuditAction.REVIEW_REJECTED: _("%(name)s rejected your request #%(pk)s (%(what)s of %(key)s on "
                                       "'%(label)s')."),
        AuditAction.CHANGES_REQUESTED: _("%(name)s asks for changes to your request #%(pk)s (%(what)s of %(key)s "
                                         "on '%(label)s'). Change the draft, then ask again."),
        AuditAction.REVIEW_COMMENTED: _("%(name)s commented on review #%(pk)s (%(what)s of %(key)s on '%(label)s')."),
        AuditAction.REVIEW_STALE: _("Review #%(pk)s of %(key)s went stale: the draft changed after the request, so "
                                    "it can no longer be approved or released as it is. Ask again with the current "
                                    "draft if it is still wanted."),
        AuditAction.REVIEW_SUPERSEDED: _("Your request #%(pk)s (%(what)s of %(key)s on '%(label)s') was "
                                         "superseded: %(reason)s"),
        AuditAction.RELEASE_WENT_LIVE: _("The release of review #%(pk)s went live as scheduled: '%(label)s' of "
                                         "%(key)s serves v%(number)s."),
        AuditAction.RELEASE_FAILED: _("The release of review #%(pk)s scheduled for %(when)s did not go live: "
                                      "%(reason)s"),
        AuditAction.RELEASE_CANCELLED: _("%(name)s cancelled the release of review #%(pk)s scheduled for %(when)s; "
                                         "the request waits for a decision again."),
        AuditAction.RELEASE_RESCHEDULED: _("%(name)s moved the release of review #%(pk)s to %(when)s."),
    }
    facts["number"] = review.result_version
    facts["reason"] = (schedule.outcome if audit.action == AuditAction.RELEASE_FAILED and schedule is not None
                       else review.decision_comment)
    if audit.action == AuditAction.REVIEW_APPROVED and review.status == "scheduled":
        return _("%(name)s approved your request #%(pk)s: %(what)s of %(key)s goes live on '%(label)s' at "
                 "%(when)s.") % facts
    return str(sentences[audit.action]) % facts


def _subject(message: MailMessage, review: ReviewRequest | None) -> str:
    audit = message.audit
    if review is None:
        text = _("Incident rollback of %(key)s ('%(label)s')") % {"key": audit.entry_key, "label": audit.label}
    else:
        topics: dict[str, str] = {
            AuditAction.REVIEW_REQUESTED: _("Review requested"),
            AuditAction.REVIEW_APPROVED: _("Approved"),
            AuditAction.REVIEW_REJECTED: _("Rejected"),
            AuditAction.CHANGES_REQUESTED: _("Changes requested"),
            AuditAction.REVIEW_COMMENTED: _("New comment"),
            AuditAction.REVIEW_STALE: _("Went stale"),
            AuditAction.REVIEW_SUPERSEDED: _("Superseded"),
            AuditAction.RELEASE_WENT_LIVE: _("Went live"),
            AuditAction.RELEASE_FAILED: _("Scheduled release failed"),
            AuditAction.RELEASE_CANCELLED: _("Scheduled release cancelled"),
            AuditAction.RELEASE_RESCHEDULED: _("Scheduled release moved"),
        }
        text = _("%(topic)s: review #%(pk)s, %(key)s → %(label)s") % {
            "topic": topics[audit.action], "pk": review.pk, "key": review.entry_key, "label": review.label}
    return f"[{_('MCP Registry')}] {text}"[:SUBJECT_CHARS]


def _link(message: MailMessage, review: ReviewRequest | None) -> tuple[str, str]:
    audit = message.audit
    if review is not None:
        return absolute(reverse("admin:registry_reviewrequest_change", args=[review.pk])), _("Open the review")
    model = KINDS[audit.entry_kind].entry_model._meta.model_name
    return absolute(reverse(f"admin:registry_{model}_history", args=[audit.entry_id])), _("Open the history")


def _facts(message: MailMessage, review: ReviewRequest | None) -> list[tuple[str, str]]:
    audit = message.audit
    if review is None:
        return [(_("Entry"), f"{_kind_name(audit.entry_kind)} {audit.entry_key}"), (_("Label"), audit.label),
                (_("Reason"), audit.note), (_("When"), when_text(audit.created_at))]
    rows = [(_("Entry"), f"{_kind_name(review.entry_kind)} {review.entry_key}"), (_("Label"), review.label),
            (_("Asks for"), str(review.what_text)), (_("Requested by"), review.requested_by_name),
            (_("Note"), review.note), (_("Status"), str(review.get_status_display()))]
    schedule = review.schedules.order_by("-created_at", "-id").first()
    if schedule is not None and schedule.is_scheduled:
        rows.append((_("Goes live at"), when_text(schedule.go_live_at)))
    if review.decision_comment and audit.action in (AuditAction.REVIEW_APPROVED, AuditAction.REVIEW_REJECTED):
        rows.append((_("Comment"), review.decision_comment))
    return rows


def compose(message: MailMessage) -> Composed:
    """The message for its recipient, in their language."""
    language = language_of(message.recipient)
    review = message.review
    with translation.override(language):
        url, url_label = _link(message, review)
        context = {
            "headline": _headline(message, review),
            "facts": _facts(message, review),
            "discussion": [{"author": c.author_name, "when": when_text(c.created_at), "text": c.text,
                            "changes": c.kind == "changes", "review": c.review_id}
                           for c in (discussion.discussion(review) if review is not None else [])],
            "url": url, "url_label": url_label,
            "kind": MailKind(message.kind).label,
            "preferences_url": absolute(reverse("registry-language")),
            "language": language,
        }
        return Composed(language, _subject(message, review),
                        render_to_string("registry/mail/message.txt", context),
                        render_to_string("registry/mail/message.html", context))
