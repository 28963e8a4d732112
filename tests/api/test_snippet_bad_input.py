"""Snippet drafts with bad input are refused with a 400 naming the field, never a server error."""

import pytest

from tests.api.test_portable import post_yaml
from tests.factories import make_snippet

pytestmark = pytest.mark.django_db

TWICE = [{"name": "tone"}, {"name": "tone"}]
BODY = {"name": "s", "description": "d", "tags": [], "text": "Be {{ tone }}.", "arguments": TWICE}


def test_creating_a_snippet_with_a_duplicate_argument_name_is_refused(as_editor):
    response = as_editor.post("/api/v1/snippets/", BODY, format="json")
    assert response.status_code == 400
    assert response.json() == {"arguments": ["The argument name 'tone' is used 2 times; names must be unique."]}


def test_updating_a_snippet_with_a_duplicate_argument_name_is_refused(as_editor):
    make_snippet("s", text="Be {{ tone }}.", arguments=[{"name": "tone"}])
    for method in (as_editor.put, as_editor.patch):
        response = method("/api/v1/snippets/s/", {**BODY} if method == as_editor.put else {"arguments": TWICE},
                          format="json")
        assert response.status_code == 400
        assert "used 2 times" in response.json()["arguments"][0]


def test_importing_a_snippet_with_a_duplicate_argument_name_is_refused(as_publisher):
    response = post_yaml(as_publisher, "snippets:\n  - name: s\n    text: 'Be {{ tone }}.'\n"
                                       "    arguments: [{name: tone}, {name: tone}]\n")
    assert response.status_code == 400
    assert "the argument 'tone' is declared twice" in response.json()["problems"][0]
