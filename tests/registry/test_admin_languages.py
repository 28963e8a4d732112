"""What an editor does in a translated admin is recorded the same as in English.

Audit notes, review requests and the webhook payloads built from them are read by every
publisher, the REST API and receivers: they must not depend on the language of whoever acted.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from registry.models import AuditEntry, EditorPreference, ReviewRequest
from registry.release import reviews, services
from tests.factories import make_prompt, make_template, make_user, release

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("language", ["de", "zh-hans"])
def test_default_note_of_a_protected_label_move_is_written_in_english(client, publisher, language):
    prompt = make_prompt()
    release(prompt, note="first release")
    message = prompt.messages.first()
    message.text = "Second take on {{ topic }}."
    message.save()
    services.publish(prompt, acting_user=publisher, note="v2", labels=[])
    EditorPreference.objects.create(user=publisher, language=language)
    client.force_login(publisher)
    response = client.post(reverse("admin:registry_prompt_label", args=[prompt.pk]),
                           {"label": "production", "version": 2, "note": ""})
    assert response.status_code == 302
    review = ReviewRequest.objects.get()
    assert review.note == "Point 'production' at v2."
    assert (AuditEntry.objects.get(action="review_requested").note
            == f"Review #{review.pk} (v2): Point 'production' at v2.")


@pytest.mark.parametrize("page, english", [
    ("/admin/", "OAuth connections"),
    ("/admin/", "OAuth-Verbindungs"),  # Django's automatic plural: the German noun plus "s"
    ("/admin/webhooks/webhook/add/", "What receives the events"),
    ("/admin/webhooks/webhook/add/", "Untick to stop sending"),
    ("/admin/webhooks/webhook/add/", ">Events:<"),
    ("/admin/webhooks/webhookdelivery/", "Failed (gave up)"),
    ("/admin/oauth/groupdefault/", "OAuth-Vorgabe für eine Gruppes"),
    ("/admin/oauth/groupdefault/add/", "Comma-separated tags; if set"),
    ("/admin/oauth/groupdefault/add/", "When a user is in several groups"),
])
def test_german_admin_pages_of_webhooks_and_oauth_speak_german(client, superuser, page, english):
    EditorPreference.objects.create(user=superuser, language="de")
    client.force_login(superuser)
    response = client.get(page)
    assert response.status_code == 200
    assert english not in response.content.decode()


@pytest.mark.parametrize("language, one, two", [
    ("en", "Archived 1 resource template.", "Archived 2 resource templates."),
    ("de", "1 Ressourcen-Vorlage archiviert.", "2 Ressourcen-Vorlagen archiviert."),
])
def test_archive_action_message_uses_the_singular_for_one_entry(client, publisher, language, one, two):
    first, second, third = make_template("a://{x}"), make_template("b://{x}"), make_template("c://{x}")
    EditorPreference.objects.create(user=publisher, language=language)
    client.force_login(publisher)
    changelist = reverse("admin:registry_resourcetemplate_changelist")
    response = client.post(changelist, {"action": "archive_selected", "_selected_action": [first.pk]}, follow=True)
    assert one in [str(m) for m in response.context["messages"]]
    response = client.post(changelist, {"action": "archive_selected", "_selected_action": [second.pk, third.pk]},
                           follow=True)
    assert two in [str(m) for m in response.context["messages"]]


def test_home_page_names_the_kind_of_entry_in_the_readers_language(client, publisher):
    template = make_template("tickets://{id}")
    reviews.request_publication(template, acting_user=make_user("Editors"), label="production", note="please")
    EditorPreference.objects.create(user=publisher, language="de")
    client.force_login(publisher)
    body = client.get(reverse("admin:index")).content.decode()
    assert "Ressourcen-Vorlage tickets://{id}" in body
    assert "template tickets://{id}" not in body


def test_review_page_names_the_kind_of_entry_in_the_readers_language(client, publisher):
    template = make_template("tickets://{id}")
    review = reviews.request_publication(template, acting_user=make_user("Editors"), label="production",
                                         note="please")
    EditorPreference.objects.create(user=publisher, language="de")
    client.force_login(publisher)
    body = client.get(reverse("admin:registry_reviewrequest_change", args=[review.pk])).content.decode()
    assert "Ressourcen-Vorlage tickets://{id}" in body


@pytest.mark.parametrize("language", ["de", "zh-hans"])
def test_incident_notice_escapes_the_reason_in_every_language(client, publisher, second_publisher, language):
    prompt = make_prompt()
    release(prompt, note="first release")
    prompt.description += " v2"
    prompt.save()
    release(prompt, note="v2")
    services.rollback(prompt, acting_user=publisher, note="<script>alert(1)</script> broke", label="production")
    EditorPreference.objects.create(user=second_publisher, language=language)
    client.force_login(second_publisher)
    body = client.get(reverse("admin:index")).content.decode()
    assert 'id="registry-incidents"' in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt; broke" in body and "<script>alert(1)" not in body
