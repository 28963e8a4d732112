"""Every kind previews unsaved edits, and a new entry before its first save: resources, templates
and snippets as prompts do, from the change and the add page; nothing is ever written. Markdown
documents are shown rendered beside their raw text, sanitised: no raw HTML, script or
foreign-scheme link from the document reaches the page, and images are links, not loaded."""

from __future__ import annotations

import json

import pytest

from registry.models import Prompt, Resource, ResourceTemplate, Snippet
from tests.factories import PNG_1X1, make_resource, make_snippet, make_template, release
from tests.registry.test_admin import client_for, prompt_post, row_counts, url
from tests.registry.test_admin_round_trip import browser_post

pytestmark = pytest.mark.django_db

HOSTILE = ("# Plan\n\n- one\n- two\n\n<script>alert(1)</script> <img src=x onerror=alert(2)>\n\n"
           "[bad](javascript:alert(3)) [good](https://example.com/a) ![tracker](https://tracker.example/p.png)\n")


def _posted(client, entry, **changes):
    """The change form of `entry` as a browser would post it, with `changes` typed in."""
    change = url(f"{entry._meta.model_name}_change", entry.pk)
    data = browser_post(client.get(change))
    data.update(changes)
    return data


def test_a_resource_previews_its_unsaved_text_as_a_client_reads_it_and_saves_nothing(client, editor):
    resource = make_resource("docs://guide", text="Saved text.", mime_type="text/plain")
    client_for(client, editor)
    data = _posted(client, resource, text="Unsaved text.")
    before = row_counts()
    response = client.post(url("resource_preview_edits", resource.pk), data, HTTP_X_REGISTRY_FRAGMENT="1")
    assert response.status_code == 200
    assert json.loads(response.context["result_json"])["contents"][0]["text"] == "Unsaved text."
    assert "not saved" in response.content.decode()
    assert row_counts() == before and Resource.objects.get(pk=resource.pk).text == "Saved text."


def test_a_markdown_document_is_rendered_beside_its_text_and_sanitised(client, editor):
    resource = make_resource("docs://plan", text="Old.", mime_type="text/markdown")
    client_for(client, editor)
    response = client.post(url("resource_preview_edits", resource.pk),
                           _posted(client, resource, text=HOSTILE), HTTP_X_REGISTRY_FRAGMENT="1")
    page = response.content.decode()
    rendered = page.split("data-registry-markdown>")[1].split("</div>")[0]
    assert "<h1>Plan</h1>" in rendered and "<li>one</li>" in rendered
    assert "<script" not in rendered and "onerror" not in rendered.replace("onerror=alert(2)&gt;", "")
    assert "&lt;script&gt;" in rendered  # shown as the text it is
    assert "javascript:" not in rendered.split("[bad]")[0] and 'href="javascript' not in rendered
    assert '<a href="https://example.com/a" target="_blank" rel="noopener noreferrer nofollow">good</a>' in rendered
    assert "<img" not in rendered and 'href="https://tracker.example/p.png"' in rendered
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.split("registry-document-text")[1]  # the raw text beside it


def test_the_saved_draft_preview_of_a_markdown_resource_renders_it_too(client, editor):
    resource = make_resource("docs://plan", text="# Saved plan", mime_type="text/markdown; charset=utf-8")
    page = client_for(client, editor).get(url("resource_preview", resource.pk)).content.decode()
    assert "<h1>Saved plan</h1>" in page and "# Saved plan" in page


def test_a_template_previews_unsaved_variables_and_body(client, editor):
    template = make_template(uri_template="notes://{id}", body="Note {{ id }}.", mime_type="text/markdown")
    client_for(client, editor)
    data = _posted(client, template, uri_template="notes://{id}/{part}", body="## Note {{ id }}, {{ part }}")
    data.update({"preview": "1", "var_id": "7", "var_part": "intro"})
    response = client.post(url("resourcetemplate_preview_edits", template.pk), data, HTTP_X_REGISTRY_FRAGMENT="1")
    assert response.status_code == 200, response.context.get("errors")
    assert response.context["uri"] == "notes://7/intro"
    assert "<h2>Note 7, intro</h2>" in response.content.decode()
    assert ResourceTemplate.objects.get(pk=template.pk).uri_template == "notes://{id}"


def test_a_snippet_previews_its_unsaved_text_with_the_snippets_it_includes(client, editor):
    release(make_snippet("greeting", text="Hello."))
    snippet = make_snippet("style", text="Be brief.")
    client_for(client, editor)
    response = client.post(url("snippet_preview_edits", snippet.pk),
                           _posted(client, snippet, text="{{> greeting }} Be kind."), HTTP_X_REGISTRY_FRAGMENT="1")
    assert response.status_code == 200
    assert response.context["text"] == "Hello. Be kind."
    assert Snippet.objects.get(pk=snippet.pk).text == "Be brief."


@pytest.mark.parametrize("model, data, shown", [
    ("prompt", {**prompt_post(None, arguments=[{"name": "who", "position": 0}],
                              messages=[{"role": "user", "kind": "text", "text": "Hi {{ who }}", "position": 0}]),
                "preview": "1", "arg-who": "Ada"}, "Hi Ada"),
    ("resource", {"uri": "docs://new", "name": "new", "mime_type": "text/plain", "text": "Brand new.",
                  "_save": "Save"}, "Brand new."),
    ("snippet", {"name": "fresh", "text": "Fresh text.", "arguments-TOTAL_FORMS": "0",
                 "arguments-INITIAL_FORMS": "0"}, "Fresh text."),
])
def test_a_new_entry_is_previewed_before_its_first_save_and_nothing_is_created(client, editor, model, data, shown):
    client_for(client, editor)
    page = client.get(url(f"{model}_add")).content.decode()
    assert url(f"{model}_add_preview_edits") in page and "data-registry-preview-button" in page
    before = row_counts()
    response = client.post(url(f"{model}_add_preview_edits"), data, HTTP_X_REGISTRY_FRAGMENT="1")
    assert response.status_code == 200, response.content
    assert not response.context["errors"], response.context["errors"]
    assert shown in response.content.decode()
    assert row_counts() == before


def test_without_javascript_a_new_entry_preview_opens_a_page_that_carries_the_form(client, editor):
    client_for(client, editor)
    data = {"uri": "docs://new", "name": "new", "mime_type": "text/markdown", "text": "# Carried", "_save": "Save"}
    page = client.post(url("resource_add_preview_edits"), data).content.decode()
    assert 'name="text" value="# Carried"' in page and "<h1>Carried</h1>" in page
    assert not Resource.objects.exists() and not Prompt.objects.exists()


def test_previewing_a_new_entry_needs_the_right_to_add_one(client, auditor):
    client_for(client, auditor)
    response = client.post(url("resource_add_preview_edits"), {"uri": "docs://x", "name": "x", "text": "t"})
    assert response.status_code == 403


@pytest.mark.parametrize("model", ["resource", "resourcetemplate", "snippet"])
def test_every_change_page_has_the_preview_panel(client, editor, model):
    entry = {"resource": lambda: make_resource("docs://p"), "resourcetemplate": lambda: make_template(),
             "snippet": lambda: make_snippet("s")}[model]()
    page = client_for(client, editor).get(url(f"{model}_change", entry.pk)).content.decode()
    assert url(f"{model}_preview_edits", entry.pk) in page and "data-registry-preview-button" in page


def test_an_unsaved_upload_is_previewed_from_the_form_and_nothing_is_stored(client, editor, caplog):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from registry.storage import blobs

    client_for(client, editor)
    data = {"uri": "docs://logo", "name": "logo", "mime_type": "image/png", "_save": "Save",
            "upload": SimpleUploadedFile("logo.png", PNG_1X1, "image/png")}
    response = client.post(url("resource_add_preview_edits"), data, HTTP_X_REGISTRY_FRAGMENT="1")
    assert response.status_code == 200 and not response.context.get("error"), response.context.get("error")
    assert response.context["image_src"].startswith("data:image/png;base64,")
    assert not [r for r in caplog.records if r.levelname == "ERROR"]  # no false "missing from the store"
    assert not blobs.exists(blobs.sha256_of(PNG_1X1))


def test_a_saved_audio_resource_is_previewed_as_a_player(client, editor):
    resource = make_resource("docs://chime", text="")
    resource.mime_type, resource.data = "audio/wav", b"RIFF$\x00\x00\x00WAVEfmt "
    resource.save()
    page = client_for(client, editor).get(url("resource_preview", resource.pk)).content.decode()
    assert '<audio controls src="data:audio/wav;base64,' in page


def test_markdown_links_go_only_to_absolute_http_https_or_mailto_addresses_in_a_new_tab():
    from registry.formats.markdown import markdown_html

    html = markdown_html("[in](/admin/registry/prompt/1/delete/) [away](//evil.example/x) [ok](https://ok.example) "
                         "![](data:image/png;base64,AAAA)")
    assert 'href="/admin' not in html and 'href="//evil' not in html and "AAAA" not in html
    assert '<a href="https://ok.example" target="_blank" rel="noopener noreferrer nofollow">ok</a>' in html
