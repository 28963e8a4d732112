"""Importing snippets: a long chain is refused as too deep, a circle within one file is named as a
circle, and a draft-only import or dry run reports reference problems like every other draft problem."""

import pytest

from tests.api.test_portable import post_yaml

pytestmark = pytest.mark.django_db

PUBLISH = {"publish": "true", "note": "n"}


def chain(length: int) -> str:
    items = "".join(f"  - name: s{i}\n    text: 'x {{{{> s{i + 1} }}}}'\n    labels: [staging]\n"
                    for i in range(length))
    return f"snippets:\n{items}  - name: s{length}\n    text: end\n    labels: [staging]\n"


@pytest.mark.parametrize("dry_run", [False, True])
def test_importing_a_chain_longer_than_the_stack_is_refused_as_too_deep(as_publisher, dry_run):
    params = {**PUBLISH, **({"dry_run": "true"} if dry_run else {})}
    response = post_yaml(as_publisher, chain(1500), **params)
    assert response.status_code == 400
    problems = response.json()["problems"]
    assert any("snippets are included more than 5 levels deep" in p for p in problems)


MUTUAL = ("snippets:\n  - name: a\n    text: 'x {{> b }}'\n    labels: [staging]\n"
          "  - name: b\n    text: 'y {{> a }}'\n    labels: [staging]\n")


def test_two_snippets_of_a_file_including_each_other_are_named_as_a_circle(as_publisher):
    response = post_yaml(as_publisher, MUTUAL, **PUBLISH)
    assert response.status_code == 400
    problems = response.json()["problems"]
    assert any("snippets[1] (name: a): Text: Line 1: the snippets include each other in a circle (a → b → a)."
               in p for p in problems)
    assert any("(name: b): Text: Line 1: the snippets include each other in a circle (b → a → b)." in p
               for p in problems)
    assert not any("does not exist" in p or "no published version" in p for p in problems)


def test_a_draft_import_names_a_circle_within_the_file_as_blocking_publishing(as_publisher):
    response = post_yaml(as_publisher, MUTUAL)
    assert response.status_code == 200
    warnings = [w for outcome in response.json()["outcomes"] for w in outcome["warnings"]]
    assert sorted(w.split(": ", 1)[1] for w in warnings) == [
        "snippets[1] (name: a): Text: Line 1: the snippets include each other in a circle (a → b → a). "
        "(blocks publishing)",
        "snippets[2] (name: b): Text: Line 1: the snippets include each other in a circle (b → a → b). "
        "(blocks publishing)",
    ]


def test_a_circle_keeps_the_other_reference_problems_of_the_text(as_publisher):
    text = ("snippets:\n  - name: a\n    text: \"x {{> b }}\\n{{> nowhere }}\"\n"
            "  - name: b\n    text: 'y {{> a }}'\n")
    warnings = post_yaml(as_publisher, text).json()["outcomes"]
    of_a = next(o for o in warnings if o["key"] == "a")["warnings"]
    assert any("Line 1: the snippets include each other in a circle (a → b → a)." in w for w in of_a)
    assert any("Line 2: the snippet 'nowhere' does not exist" in w for w in of_a)


# A draft-only import saves drafts whatever validation says and lists each problem as blocking
# publishing (an undeclared placeholder, a malformed '{{'): reference problems are listed the same way.
DRAFT_PROBLEMS = {
    "self": ("snippets:\n  - name: a\n    text: 'x {{> a }}'\n", "circle (a → a)"),
    "malformed": ("snippets:\n  - name: a\n    text: 'x {{> b c }}'\n", "is not a valid snippet reference"),
    "version_zero": ("snippets:\n  - name: a\n    text: 'x {{> b@0 }}'\n  - name: b\n    text: 'y'\n",
                     "Snippet versions start at 1"),
    "missing": ("prompts:\n  - name: p\n    description: d\n    messages:\n      - text: 'x {{> nowhere }}'\n",
                "the snippet 'nowhere' does not exist"),
    "undeclared_placeholder": ("prompts:\n  - name: p\n    description: d\n    messages:\n"
                               "      - text: 'x {{ nowhere }}'\n", "is not a declared argument"),
}


@pytest.mark.parametrize("case", list(DRAFT_PROBLEMS))
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_draft_import_and_its_dry_run_report_reference_problems_as_blocking(as_publisher, case, dry_run):
    text, reason = DRAFT_PROBLEMS[case]
    response = post_yaml(as_publisher, text, **({"dry_run": "true"} if dry_run else {}))
    assert response.status_code == 200
    warnings = [w for outcome in response.json()["outcomes"] for w in outcome["warnings"]]
    assert any(reason in w and w.endswith("(blocks publishing)") and w.startswith("import.yaml:") for w in warnings)
    published = post_yaml(as_publisher, text, dry_run="true", **PUBLISH)
    assert published.status_code == 400  # what the dry run warned of, a publishing run refuses
    assert any(reason in p for p in published.json()["problems"])
