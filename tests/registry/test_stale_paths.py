"""Issue 22: "a draft change makes its open requests stale once, audited, the requester told" holds
on every path: a service's save and a plain ORM save (a shell, a script) apply the one stale rule."""

from __future__ import annotations

import pytest

from registry.authoring import drafts
from registry.models import AuditAction, AuditEntry, MailMessage, PromptMessage
from registry.release import reviews
from tests.factories import make_prompt, make_user, release

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(db):
    return {"editor": make_user("Editors", email="@"), "publisher": make_user("Publishers", email="@")}


def _requested(people, name: str):
    prompt = make_prompt(name)
    release(prompt)
    data = drafts.draft_data(prompt)
    data["description"] = "Friendlier"
    drafts.save_draft(prompt, data, acting_user=people["editor"])
    return prompt, reviews.request_publication(prompt, acting_user=people["editor"], note="friendlier")


def _went_stale(prompt, review):
    """The stale rule's traces: its audit rows and the mail hanging on them."""
    rows = list(AuditEntry.objects.filter(entry_kind="prompt", entry_id=prompt.pk, action=AuditAction.REVIEW_STALE))
    mail = sorted((m.recipient.username, m.kind, m.review_id == review.pk)
                  for m in MailMessage.objects.filter(audit__in=rows))
    review.refresh_from_db()
    audits = [(r.actor_name, r.label, r.from_version, r.entry_key == prompt.key,
               r.note.replace(f"#{review.pk}", "#N").replace(prompt.key, "KEY")) for r in rows]
    return audits, mail, review.went_stale_at is not None


def test_an_orm_save_makes_the_request_stale_with_the_audit_row_and_mail_of_a_service_save(people):
    by_service, service_review = _requested(people, "by-service")
    data = drafts.draft_data(by_service)
    data["description"] = "Changed again"
    drafts.save_draft(by_service, data, acting_user=people["editor"])
    by_orm, orm_review = _requested(people, "by-orm")
    by_orm.description = "Changed again"  # in a shell, no service
    by_orm.save()
    service_traces, orm_traces = _went_stale(by_service, service_review), _went_stale(by_orm, orm_review)
    assert orm_traces == service_traces
    audits, mail, stamped = orm_traces
    assert len(audits) == 1 and audits[0][0] == "registry" and stamped
    assert mail == [(people["editor"].username, "review_outcome", True)]


def test_a_message_edited_and_saved_in_a_shell_makes_the_request_stale_once(people):
    prompt, review = _requested(people, "edited-message")
    message = PromptMessage.objects.get(prompt=prompt)
    message.text = "Tell me everything about {{ topic }}."
    message.save()
    prompt.save()
    prompt.description = "And again"
    prompt.save()
    audits, mail, stamped = _went_stale(prompt, review)
    assert len(audits) == 1 and len(mail) == 1 and stamped


def test_an_orm_save_that_changes_nothing_the_request_covers_leaves_it_open(people):
    prompt, review = _requested(people, "unchanged")
    prompt.save()  # a new revision, the same content
    assert _went_stale(prompt, review) == ([], [], False)
