"""Each editor's own admin language: saved once, applied at login and on every request (issue 12 §8)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.urls import reverse

from registry.admin.language import saved_language
from registry.models import EditorPreference
from tests.factories import make_user

pytestmark = pytest.mark.django_db

LANGUAGE_URL = "/admin/language/"


def test_saved_language_wins_over_the_browsers_on_every_request(client):
    editor = make_user("Editors")
    EditorPreference.objects.create(user=editor, language="de")
    client.force_login(editor)
    response = client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="zh-Hans,zh;q=0.9")
    assert '<html lang="de"' in response.content.decode()
    assert "Abmelden" in response.content.decode()  # Django's own admin, in German
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "de"


def test_without_a_saved_language_the_browser_decides(client):
    client.force_login(make_user("Editors"))
    response = client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="zh-Hans,zh;q=0.9")
    assert '<html lang="zh-hans"' in response.content.decode()
    assert settings.LANGUAGE_COOKIE_NAME not in response.cookies


def test_user_tools_link_to_the_language_page(client):
    client.force_login(make_user("Editors"))
    body = client.get(reverse("admin:index")).content.decode()
    assert 'id="registry-language-link"' in body
    assert f'href="{LANGUAGE_URL}?next=' in body


def test_language_page_saves_the_choice_for_the_own_account_and_sets_the_cookie(client):
    editor = make_user("Editors")
    client.force_login(editor)
    assert client.get(LANGUAGE_URL).status_code == 200
    response = client.post(LANGUAGE_URL, {"language": "zh-hans", "next": "/admin/registry/"})
    assert response.status_code == 302 and response["Location"] == "/admin/registry/"
    assert EditorPreference.objects.get(user=editor).language == "zh-hans"
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    assert '<html lang="zh-hans"' in client.get(reverse("admin:index")).content.decode()


def test_language_page_back_to_the_browsers_language_clears_the_choice(client):
    editor = make_user("Editors")
    EditorPreference.objects.create(user=editor, language="de")
    client.force_login(editor)
    client.post(LANGUAGE_URL, {"language": ""})
    assert saved_language(editor) == ""
    response = client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="en")
    assert '<html lang="en"' in response.content.decode()


def test_language_page_refuses_a_language_that_is_not_offered(client):
    editor = make_user("Editors")
    client.force_login(editor)
    response = client.post(LANGUAGE_URL, {"language": "fr"})
    assert response.status_code == 200 and response.context["form"].errors
    assert not EditorPreference.objects.filter(user=editor).exists()


def test_language_page_does_not_redirect_to_another_site(client):
    client.force_login(make_user("Editors"))
    response = client.post(LANGUAGE_URL, {"language": "de", "next": "https://evil.example/"})
    assert response["Location"] == reverse("admin:index")


def test_language_page_needs_a_signed_in_user(client):
    response = client.get(LANGUAGE_URL)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_signing_in_applies_the_saved_language(client):
    editor = make_user("Editors", password="pw-for-tests-1")
    EditorPreference.objects.create(user=editor, language="zh-hans")
    response = client.post(reverse("admin:login"), {"username": editor.username, "password": "pw-for-tests-1",
                                                    "next": "/admin/"}, HTTP_ACCEPT_LANGUAGE="de")
    assert response.status_code == 302
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    assert '<html lang="zh-hans"' in client.get("/admin/", HTTP_ACCEPT_LANGUAGE="de").content.decode()


def test_superusers_see_everyones_preferences(client, superuser):
    EditorPreference.objects.create(user=make_user("Editors", username="erika"), language="de")
    client.force_login(superuser)
    response = client.get(reverse("admin:registry_editorpreference_changelist"))
    assert "erika" in response.content.decode()


# ------------------------------------------------------------------- pages in the editor's language


def _speaks(user, language: str) -> None:
    EditorPreference.objects.update_or_create(user=user, defaults={"language": language})


def test_a_german_editor_sees_the_prompt_change_page_in_german(client):
    from tests.factories import make_prompt, release

    editor = make_user("Editors")
    _speaks(editor, "de")
    prompt = make_prompt("greet")
    release(prompt, note="v1")
    client.force_login(editor)
    page = client.get(reverse("admin:registry_prompt_change", args=[prompt.pk])).content.decode()
    assert "Vorschau des gespeicherten Entwurfs" in page  # the project's own menu
    assert "Veröffentlichung beantragen…" in page
    assert "Beschreibung" in page and "Rolle" in page  # form labels
    assert "Sichern" in page  # Django's own admin
    assert "Preview saved draft" not in page


def test_a_chinese_publisher_sees_the_home_page_in_chinese(client):
    publisher = make_user("Publishers")
    _speaks(publisher, "zh-hans")
    client.force_login(publisher)
    page = client.get(reverse("admin:index")).content.decode()
    assert "等待您审核（0）" in page and "提示词" in page
    assert "Waiting for your review" not in page


def test_a_german_editors_form_errors_are_german_and_sit_at_their_field(client):
    from tests.factories import make_prompt
    from tests.registry.test_admin import prompt_post

    editor = make_user("Editors")
    _speaks(editor, "de")
    prompt = make_prompt("support", arguments=[{"name": "customer_name", "required": True}])
    data = prompt_post(prompt)
    data["messages-0-text"] = "   "
    client.force_login(editor)
    response = client.post(reverse("admin:registry_prompt_change", args=[prompt.pk]), data)
    formset = response.context["inline_admin_formsets"][1].formset
    assert formset.forms[0].errors["text"] == ["Der Text ist leer."]


def test_a_german_editor_sees_a_diff_in_german(client):
    from tests.factories import make_prompt, release
    from tests.registry.test_admin import edit_first_message

    publisher = make_user("Publishers")
    _speaks(publisher, "de")
    prompt = make_prompt("greet")
    release(prompt, note="v1")
    edit_first_message(prompt, "A new text about {{ topic }}.")
    client.force_login(publisher)
    page = client.get(reverse("admin:registry_prompt_diff", args=[prompt.pk])).content.decode()
    assert "Nachricht 1" in page and "aktueller Entwurf" in page


def test_the_users_language_does_not_outlive_the_request(client):
    from django.utils import translation

    editor = make_user("Editors")
    EditorPreference.objects.create(user=editor, language="de")
    client.force_login(editor)
    response = client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="en")
    assert response["Content-Language"] == "de"
    assert translation.get_language() == "en"  # what LocaleMiddleware chose for the thread, not the user's
