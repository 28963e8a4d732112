"""Every page an editor, publisher or auditor reads is in their language (issue 23).

The walk renders each page in English, German and Chinese with the same data, collects the text a
reader sees (text nodes outside <script>/<style>, and the title, placeholder, aria-label, alt and
button-value attributes), and asserts that no English text of a page appears verbatim on its
German or Chinese rendering. Names, codes and data are the same in every language: they are
recognised by shape (numbers, versions, dates, URIs, identifiers) or listed in ALLOWED, with the
reason, so a new untranslated string fails the walk instead of hiding among them.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from registry.models import AuditEntry, EditorPreference
from registry.release import reviews, services
from tests.factories import make_prompt, make_resource, make_snippet, make_template, release
from tests.oauth.conftest import HOST, authorize_params, pkce, register

pytestmark = pytest.mark.django_db

VISIBLE_ATTRIBUTES = ("title", "placeholder", "aria-label", "alt")
SKIPPED_TAGS = {"script", "style", "template", "textarea", "pre", "code"}  # code: names and data

# The same in every language, with the reason. Data of the walk's entries (texts, names, notes: the
# audit log and review notes stay as written, README: Languages; words of a diffed message text).
DATA = {
    "Says hello in the walk", "Tell me about {{ topic }}.", "Greet {{ topic }} warmly.", "Tell me", "more",
    "about {{ topic }}.", "Item {{ id }}", "topic", "topic:", "Claude", "Walk request", "v2 for the walk",
    "first release", "Review #1 (v2): Walk request", "release script", "command line (operator)",
    "Some content", "text/plain", "Greet tea warmly.", "Tell me more about tea.",
    "v1 — first release", "v2 — v2 for the walk",  # the diff's version menu: number and change note
    "Plan", "stage", "text/markdown", "id",  # the Markdown document as rendered, its type; a URI variable's name
}
NAMES = {  # product names and terms kept in English in the catalogs on purpose
    "MCP", "MCP Registry", "OAuth", "URI", "JSON", "API", "ID", "Prompts", "production", "Production",
    "staging",
}
GERMAN_COGNATES = {  # German spells them the same
    "Name", "Status", "Tags", "Label", "Labels", "Version", "Details", "Text", "Audio", "Link", "Filter",
    "Position", "Minimum", "Maximum", "Hash", "Rollout…", "Rollout", "Rollouts", "Prompt", "Webhooks", "Token",
}
ALLOWED = {"de": DATA | NAMES | GERMAN_COGNATES, "zh-hans": DATA | NAMES}
DATA_SHAPE = re.compile(
    r"^(?:[\W\d_]+"                                          # numbers, punctuation, arrows
    r"|v\d+(?:\s*[→,]\s*v?\d+)*"                            # versions
    r"|[a-z]+: v\d+"                                         # a label and its version
    r"|[\w.+-]+@[\w.-]+"                                     # e-mail addresses
    r"|(?:› )?(?:[a-z][\w+.-]*://\S*|/\S*)"                  # URIs and paths (also as a breadcrumb)
    r"|(?:› )?[a-z][a-z0-9]*(?:-[a-z0-9]+)+"                  # usernames and entry keys
    r"|[0-9a-f]{12,}"                                        # hashes
    r"|\d{4}-\d\d-\d\d(?: \d\d:\d\d)?"                     # dates
    r")$"
)


class VisibleText(HTMLParser):
    """The strings a reader sees on a page, whitespace-normalised."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.skipping = 0
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in SKIPPED_TAGS:
            self.skipping += 1
        values = dict(attrs)
        shown = [values.get(name) for name in VISIBLE_ATTRIBUTES]
        if tag == "input" and values.get("type") in ("submit", "button", "reset"):
            shown.append(values.get("value"))
        self.found.extend(v for v in shown if v)

    def handle_endtag(self, tag):
        if tag in SKIPPED_TAGS and self.skipping:
            self.skipping -= 1

    def handle_data(self, data):
        if not self.skipping:
            self.found.append(data)


def visible_text(html: str) -> set[str]:
    parser = VisibleText()
    parser.feed(html)
    return {t for t in (" ".join(s.split()) for s in parser.found) if t}


def translatable(text: str, language: str) -> bool:
    """Has words, and is neither allowed (also as a breadcrumb "› Prompts", a label "Name:" or
    "(Text)") nor data."""
    bare = text.removeprefix("› ").removesuffix(":")
    if bare.startswith("(") and bare.endswith(")"):
        bare = bare[1:-1]
    return bool(re.search(r"[A-Za-z]{2}", text)) and bare not in ALLOWED[language] and not DATA_SHAPE.match(text)


@pytest.fixture
def walk(editor, publisher, auditor):
    """Data every page has something to show for, and the pages to walk."""
    prompt = make_prompt("walk-prompt", description="Says hello in the walk", messages=[
        {"role": "user", "kind": "text", "text": "Tell me about {{ topic }}."},
        {"role": "assistant", "kind": "text", "text": "Greet {{ topic }} warmly."},
    ])
    release(prompt, labels=("production", "staging"))
    message = prompt.messages.first()
    message.text = "Tell me more about {{ topic }}."
    message.save()
    services.publish(prompt, acting_user=publisher, note="v2 for the walk", labels=[])
    services.move_label(prompt, label="staging", version_number=2, acting_user=publisher, note="")
    review = reviews.request_publication(prompt, acting_user=editor, note="Walk request", label="production")
    resource = make_resource("file:///walk/resource.txt", name="walk-resource")
    release(resource)
    template = make_template("walk://{id}", name="walk-template")
    release(template)
    markdown = make_resource("docs://walk-plan", name="walk-plan", text="# Plan\n\n- stage", mime_type="text/markdown")
    snippet = make_snippet("walk-snippet", text="Be brief.")
    moved = AuditEntry.objects.filter(action="label_move").latest("pk")
    _status, app = register(_web(), client_name="Claude")
    consent = "/oauth/authorize/?" + urlencode(authorize_params(app["client_id"], pkce()[1]))
    pages = {
        "home": reverse("admin:index"),
        "editor home": reverse("admin:index"),
        "prompt list": reverse("admin:registry_prompt_changelist"),
        "resource list": reverse("admin:registry_resource_changelist"),
        "template list": reverse("admin:registry_resourcetemplate_changelist"),
        "prompt change": reverse("admin:registry_prompt_change", args=[prompt.pk]),
        "resource change": reverse("admin:registry_resource_change", args=[resource.pk]),
        "template change": reverse("admin:registry_resourcetemplate_change", args=[template.pk]),
        "review queue": reverse("admin:registry_reviewrequest_changelist"),
        "review": reverse("admin:registry_reviewrequest_change", args=[review.pk]),
        "diff": reverse("admin:registry_prompt_diff", args=[prompt.pk]),
        "preview": reverse("admin:registry_prompt_preview", args=[prompt.pk]) + "?preview=1&arg-topic=tea",
        "markdown preview": reverse("admin:registry_resource_preview", args=[markdown.pk]),
        "template preview": reverse("admin:registry_resourcetemplate_preview", args=[template.pk]),
        "snippet change": reverse("admin:registry_snippet_change", args=[snippet.pk]),
        "snippet preview": reverse("admin:registry_snippet_preview", args=[snippet.pk]),
        "new resource": reverse("admin:registry_resource_add"),
        "audit list": reverse("admin:registry_auditentry_changelist"),
        "audit entry": reverse("admin:registry_auditentry_change", args=[moved.pk]),
        "history": reverse("admin:registry_prompt_history", args=[prompt.pk]),
        "consent": consent,
    }
    return {"publisher": publisher, "auditor": auditor, "editor": editor}, pages


def _web() -> Client:
    return Client(HTTP_HOST=HOST)  # the OAuth pages answer on the registry's own host only


def _render(user, path: str, language: str) -> str:
    EditorPreference.objects.update_or_create(user=user, defaults={"language": language})
    web = _web()
    web.force_login(user)
    response = web.get(path)
    assert response.status_code == 200, (path, language, response.status_code)
    return response.content.decode()


@pytest.mark.parametrize("language", ["de", "zh-hans"])
def test_no_english_text_is_left_on_any_page(walk, language):
    users, pages = walk
    left: dict[str, list[str]] = {}
    for name, path in pages.items():
        user = users["auditor" if name.startswith("audit") else "editor" if name.startswith("editor") else "publisher"]
        english = {t for t in visible_text(_render(user, path, "en")) if translatable(t, language)}
        shown = visible_text(_render(user, path, language))
        if leftover := sorted(english & shown):
            left[name] = leftover
    assert left == {}


def test_message_rows_are_headed_from_one_in_words_like_the_diffs(walk):
    users, pages = walk
    english = _render(users["publisher"], pages["prompt change"], "en")
    assert '<span class="inline_label">1. User, Text' in english
    assert '<span class="inline_label">2. Assistant, Text' in english
    assert '<span class="inline_label">0.' not in english
    assert '<span class="inline_label">1. 用户，文本' in _render(users["publisher"], pages["prompt change"], "zh-hans")


def test_an_audit_entry_is_titled_by_its_action_in_words_not_its_code(walk):
    users, pages = walk
    page = _render(users["auditor"], pages["audit entry"], "de")
    assert "label_move" not in page and "Label verschoben" in page
