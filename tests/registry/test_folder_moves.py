"""Moving an entry to another folder changes who may edit it (team ownership), not its content:
every path that moves one is checked and audited, a bulk QuerySet.update() of `folder` is refused,
and an open review of the entry stays valid (not stale) while its deciders follow the new folder."""

from __future__ import annotations

import pytest

from registry.authoring import drafts
from registry.errors import BulkUpdateRefused, FolderOwnershipDenied
from registry.models import AuditAction, AuditEntry, Prompt, ReviewStatus
from registry.release import reviews
from tests.factories import make_prompt, make_user

pytestmark = pytest.mark.django_db



def test_a_bulk_update_of_the_folder_is_refused_with_a_pointer_to_save(team):
    prompt = make_prompt("outside", folder="sales")
    with pytest.raises(BulkUpdateRefused, match=r"which team may edit them.*\.save\(\)"):
        Prompt.objects.filter(pk=prompt.pk).update(folder="support")
    assert Prompt.objects.get(pk=prompt.pk).folder == "sales"


def test_a_plain_orm_save_that_moves_an_entry_is_audited_as_a_move():
    prompt = make_prompt("greet", folder="sales")
    prompt.folder = "support/billing"
    prompt.save()
    row = AuditEntry.objects.get(action=AuditAction.FOLDER_MOVED, entry_key="greet")
    assert row.actor_name == "database"
    assert row.changes == [{"field": "folder", "before": "sales", "after": "support/billing"}]


def test_a_service_move_is_audited_once(team):
    prompt = make_prompt("greet", folder="sales")
    drafts.save_draft(prompt, {"folder": "support"}, acting_user=team["editor"])
    assert AuditEntry.objects.filter(action=AuditAction.FOLDER_MOVED, entry_key="greet").count() == 1


def test_a_move_keeps_an_open_review_valid_and_its_deciders_follow_the_new_folder(team):
    outsider = make_user("Publishers")
    prompt = make_prompt("greet", folder="sales")
    review = reviews.request_publication(prompt, acting_user=team["editor"], note="please", label="production")
    drafts.save_draft(prompt, {"folder": "support"}, acting_user=team["editor"])
    prompt.refresh_from_db()
    review.refresh_from_db()
    assert reviews.staleness(review, prompt) == "" and review.went_stale_at is None  # the content is unchanged
    assert not reviews.can_decide(outsider, review)
    with pytest.raises(FolderOwnershipDenied):
        reviews.approve(review, acting_user=outsider)
    reviews.approve(review, acting_user=team["publisher"])
    review.refresh_from_db()
    assert review.status == ReviewStatus.APPROVED
