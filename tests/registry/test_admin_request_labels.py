"""The label of "Request publication…" is one of the labels in use, or a new one confirmed as new:
a typo such as `prodution` no longer files a real request for a label nobody serves (issue 23)."""

from __future__ import annotations

import pytest

from registry.models import McpClient, ReviewRequest
from registry.release.labels import known_label_names
from tests.factories import make_prompt, release
from tests.registry.test_admin import client_for, url

pytestmark = pytest.mark.django_db


def test_the_request_page_offers_the_labels_in_use(client, editor):
    prompt = make_prompt("offered")
    release(prompt, note="v1", labels=("production", "canary"))
    McpClient.objects.create(name="early", label="beta")
    page = client_for(client, editor).get(url("prompt_request", prompt.pk)).content.decode()
    datalist = page.split('<datalist id="id_label-options">')[1].split("</datalist>")[0]
    for name in ("production", "staging", "canary", "beta"):
        assert f'<option value="{name}">' in datalist
    assert 'list="id_label-options"' in page
    assert 'name="new_label"' in page and "This is a new label" in page
    assert known_label_names()[:2] == ["production", "staging"]


def test_a_typo_of_a_label_is_refused_with_a_suggestion_and_files_nothing(client, editor):
    prompt = make_prompt("typo")
    response = client_for(client, editor).post(url("prompt_request", prompt.pk),
                                               {"label": "prodution", "note": "Ready"})
    assert response.status_code == 200
    assert "No entry or client uses the label &#x27;prodution&#x27;. Did you mean &#x27;production&#x27;?" in (
        response.content.decode())
    assert not ReviewRequest.objects.exists()


def test_a_new_label_is_filed_once_confirmed_as_new(client, editor):
    prompt = make_prompt("fresh-label")
    client_for(client, editor)
    client.post(url("prompt_request", prompt.pk), {"label": "nightly", "note": "Ready"})
    assert not ReviewRequest.objects.exists()
    response = client.post(url("prompt_request", prompt.pk), {"label": "nightly", "note": "Ready", "new_label": "on"})
    assert response.status_code == 302
    assert ReviewRequest.objects.get().label == "nightly"


def test_a_known_label_needs_no_confirmation(client, editor):
    prompt = make_prompt("known")
    response = client_for(client, editor).post(url("prompt_request", prompt.pk),
                                               {"label": "staging", "note": "Ready"})
    assert response.status_code == 302
    assert ReviewRequest.objects.get().label == "staging"
