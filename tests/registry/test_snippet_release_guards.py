"""A snippet release is refused where it would serve a dependent placeholders the dependent cannot
fill (a prompt not declaring the argument or declaring another type, a resource, a template
without that URI variable), on every path that moves a label: publish, move, rollback; only what
the move changes is judged, pinned and unaffected dependents do not block it, and the save check
reads every version a label serves, not only the newest."""

from __future__ import annotations

import pytest

from registry.authoring.validation import validate_entry
from registry.errors import InvalidEntry
from registry.models import Prompt, Snippet, SnippetArgument, SnippetLabel
from registry.release import services
from registry.serving.catalogs import catalog_for
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource, make_snippet, make_template, release
from tests.registry.test_snippet_serving import reload

pytestmark = pytest.mark.django_db


def with_mood(snippet: Snippet, *, kind: str = "text", labels=("production",)):
    """A new version of `snippet` using the argument mood, released to `labels`."""
    Snippet.objects.filter(pk=snippet.pk).update(text="Be {{ mood }}.")
    SnippetArgument.objects.create(snippet=snippet, position=0, name="mood", type=kind)
    return release(Snippet.objects.get(pk=snippet.pk), note="a mood", labels=labels)


def follower(name: str, text: str = "{{> style }} About {{ topic }}.", arguments=(), labels=("production",)):
    prompt = make_prompt(name, messages=[{"role": "user", "kind": "text", "text": text}])
    for position, arg in enumerate(arguments, start=1):
        prompt.arguments.create(position=position, **arg)
    release(prompt, labels=labels)
    return prompt


@pytest.fixture
def style():
    snippet = make_snippet("style", text="Be brief.")
    release(snippet)
    return snippet


def test_publishing_a_snippet_version_a_follower_cannot_fill_is_refused_with_the_follower_named(style):
    follower("reply")
    with pytest.raises(InvalidEntry) as refused:
        with_mood(style)
    text = " ".join(refused.value.problems)
    assert "v2 of the snippet 'style' cannot be served on 'production'" in text
    assert "prompt reply (production): the snippet 'style' uses the argument 'mood'" in text
    assert not Snippet.objects.get(pk=style.pk).versions.filter(number=2).exists()  # nothing half done
    reload()
    served = catalog_for("production").get_prompt(Viewer(), "reply", {"topic": "owls"})
    assert served.result["messages"][0]["content"]["text"] == "Be brief. About owls."


def test_a_follower_declaring_the_argument_lets_the_release_go(style):
    follower("reply", "{{> style }} {{ topic }}", arguments=[{"name": "mood"}])
    with_mood(style)
    assert SnippetLabel.objects.get(entry=style, name="production").version.number == 2


def test_a_follower_declaring_another_type_is_refused(style):
    follower("reply", "{{> style }} {{ topic }}", arguments=[{"name": "mood", "type": "integer"}])
    with pytest.raises(InvalidEntry, match="to be of type text, not integer"):
        with_mood(style)


def test_a_resource_and_a_template_without_the_variable_refuse_it_and_a_template_with_it_does_not(style):
    release(make_resource(uri="docs://guide", text="{{> style }} Read on.", mime_type="text/plain"))
    release(make_template(uri_template="notes://{mood}", body="{{> style }} Note."))
    release(make_template(uri_template="items://{id}", body="{{> style }} Item."))
    with pytest.raises(InvalidEntry) as refused:
        with_mood(style)
    text = " ".join(refused.value.problems)
    assert "resource docs://guide (production)" in text and "a resource has no arguments" in text
    assert "template items://{id} (production)" in text and "not a variable of the URI template" in text
    assert "notes://" not in text


def test_a_pinned_follower_and_one_served_from_another_label_do_not_block_it(style):
    follower("pinned", "{{> style@1 }} {{ topic }}")
    with_mood(style, labels=("staging",))  # nothing follows style on staging
    assert SnippetLabel.objects.get(entry=style, name="staging").version.number == 2


def test_moving_a_label_and_rolling_back_to_an_unfillable_version_are_refused(style):
    follower("reply")
    with_mood(style, labels=("staging",))  # v2, staging only: nothing follows it there
    with pytest.raises(InvalidEntry, match="prompt reply"):
        services.move_label(Snippet.objects.get(pk=style.pk), label="production", version_number=2, acting_user=None,
                            actor="release script", note="promote", override_reason="test")
    Snippet.objects.filter(pk=style.pk).update(text="Be calm.")
    SnippetArgument.objects.filter(snippet=style).delete()
    release(Snippet.objects.get(pk=style.pk), note="calm", labels=("staging",))  # v3 without mood
    follower("staged", labels=("staging",))
    with pytest.raises(InvalidEntry, match=r"prompt staged \(staging\)"):
        services.rollback(Snippet.objects.get(pk=style.pk), label="staging", acting_user=None, actor="release script",
                          note="back", to_version=2, override_reason="test")


def test_a_prompt_pinning_an_outer_snippet_that_follows_the_released_one_is_judged_and_announced(style):
    from registry.release.uses import dependents

    release(make_snippet("outer", text="{{> style }} Outer."))
    follower("pinning", "{{> outer@1 }} About {{ topic }}.")
    assert ("prompt", "pinning", "production") in dependents("style", "production")
    with pytest.raises(InvalidEntry, match=r"prompt pinning \(production\)"):
        with_mood(style)


def test_a_rollout_candidate_following_the_snippet_is_judged_too(style):
    from registry.release.rollouts import set_rollout

    prompt = follower("reply", "Plain about {{ topic }}.")
    prompt.messages.update(text="{{> style }} About {{ topic }}.")
    release(Prompt.objects.get(pk=prompt.pk), note="v2 follows style", labels=())
    set_rollout(Prompt.objects.get(pk=prompt.pk), label="production", version_number=2, percent=30,
                acting_user=None, note="try")
    with pytest.raises(InvalidEntry, match=r"prompt reply \(production\)"):
        with_mood(style)


def test_an_entry_is_judged_by_the_snippet_versions_of_the_label_it_is_released_to(style):
    from registry.errors import InvalidRollout
    from registry.release.rollouts import set_rollout

    with_mood(style, labels=("staging",))  # v2 on staging uses mood; production keeps v1
    Snippet.objects.filter(pk=style.pk).update(text="Be calm.")
    SnippetArgument.objects.filter(snippet=style).delete()
    release(Snippet.objects.get(pk=style.pk), note="calm", labels=())  # v3, newest, on no label
    prompt = make_prompt("reply", messages=[{"role": "user", "kind": "text", "text": "{{> style }} {{ topic }}"}])
    assert validate_entry(Prompt.objects.get(pk=prompt.pk)).ok  # the newest needs no mood
    release(prompt)  # production serves style v1: fine
    with pytest.raises(InvalidEntry, match=r"v1 of reply cannot be served on 'staging'"):
        services.move_label(Prompt.objects.get(pk=prompt.pk), label="staging", version_number=1, acting_user=None,
                            actor="release script", note="stage")
    plain = follower("plain", "Plain {{ topic }}.", labels=("staging",))
    plain.messages.update(text="{{> style }} {{ topic }}")
    release(Prompt.objects.get(pk=plain.pk), note="v2 follows style", labels=())
    with pytest.raises(InvalidRollout, match="cannot be served on 'staging'"):
        set_rollout(Prompt.objects.get(pk=plain.pk), label="staging", version_number=2, percent=10,
                    acting_user=None, note="try")


@pytest.mark.parametrize("bulk", [True, False])
def test_an_import_publishing_to_a_label_whose_snippet_it_cannot_fill_is_refused(tmp_path, style, bulk):
    from registry.portable.importer import ImportFailed, import_documents

    with_mood(style, labels=("staging",))
    Snippet.objects.filter(pk=style.pk).update(text="Be calm.")
    SnippetArgument.objects.filter(snippet=style).delete()
    release(Snippet.objects.get(pk=style.pk), note="calm", labels=())  # newest: no mood
    release(make_prompt("reply", messages=[{"role": "user", "kind": "text", "text": "Plain {{ topic }}"}]))
    path = tmp_path / "registry.yaml"
    path.write_text("prompts:\n  - name: reply\n    labels: [staging]\n    description: composed\n"
                    "    arguments: [{name: topic}]\n"
                    "    messages:\n      - {role: user, text: '{{> style }} About {{ topic }}'}\n")
    with pytest.raises(ImportFailed, match="cannot be served on 'staging'"):
        import_documents(path, publish=True, note="ship", acting_user=None, bulk=bulk)
    assert Prompt.objects.get(name="reply").versions.count() == 1


def test_a_review_request_that_could_never_be_carried_out_is_refused_when_filed(style):
    from registry.models import ReviewRequest
    from registry.release import reviews
    from tests.factories import make_user

    follower("reply")
    Snippet.objects.filter(pk=style.pk).update(text="Be {{ mood }}.")
    SnippetArgument.objects.create(snippet=style, position=0, name="mood", type="text")
    editor = make_user("Editors")
    with pytest.raises(InvalidEntry) as refused:  # the draft, asked for on production
        reviews.request_publication(Snippet.objects.get(pk=style.pk), acting_user=editor, note="a mood")
    assert "prompt reply (production): the snippet 'style' uses the argument 'mood'" in " ".join(
        refused.value.problems)
    release(Snippet.objects.get(pk=style.pk), note="a mood", labels=("staging",))  # v2, where nothing follows it
    with pytest.raises(InvalidEntry, match=r"v2 of the snippet 'style' cannot be served on 'production'"):
        reviews.request_publication(Snippet.objects.get(pk=style.pk), acting_user=editor, note="promote",
                                    version_number=2)
    assert not ReviewRequest.objects.exists()


def test_an_approval_scheduled_for_later_is_judged_when_given(style):
    from datetime import timedelta

    from django.utils import timezone

    from registry.models import ReviewRequest, ScheduledRelease
    from registry.release import reviews
    from tests.factories import make_user

    Snippet.objects.filter(pk=style.pk).update(text="Be {{ mood }}.")
    SnippetArgument.objects.create(snippet=style, position=0, name="mood", type="text")
    review = reviews.request_publication(Snippet.objects.get(pk=style.pk), acting_user=make_user("Editors"),
                                         note="a mood")  # nothing follows style yet: fine when filed
    follower("reply")  # a follower arrives before the decision
    with pytest.raises(InvalidEntry, match=r"prompt reply \(production\)"):
        reviews.approve(review, acting_user=make_user("Publishers"), go_live_at=timezone.now() + timedelta(days=1))
    assert ReviewRequest.objects.get(pk=review.pk).status == "pending"
    assert not ScheduledRelease.objects.exists()


def test_restoring_an_entry_a_snippet_release_passed_by_while_archived_is_refused_until_it_is_fixed(style):
    reply = follower("reply")
    services.set_archived(Prompt.objects.get(pk=reply.pk), archived=True, acting_user=None)
    with_mood(style)  # nothing served follows style now: the release goes
    with pytest.raises(InvalidEntry) as refused:
        services.set_archived(Prompt.objects.get(pk=reply.pk), archived=False, acting_user=None)
    text = " ".join(refused.value.problems)
    assert "reply cannot be restored" in text and "prompt reply (production)" in text
    assert Prompt.objects.get(pk=reply.pk).archived_at is not None
    reply.arguments.create(position=2, name="mood")
    release(Prompt.objects.get(pk=reply.pk), note="declares mood")
    services.set_archived(Prompt.objects.get(pk=reply.pk), archived=False, acting_user=None)
    reload()
    served = catalog_for("production").get_prompt(Viewer(), "reply", {"topic": "owls", "mood": "calm"})
    assert served.result["messages"][0]["content"]["text"] == "Be calm. About owls."


def test_a_refused_request_stores_nothing_in_the_content_store(style, monkeypatch):
    from registry.release import reviews
    from tests.factories import make_user

    follower("reply")
    Snippet.objects.filter(pk=style.pk).update(text="Be {{ mood }}.")
    SnippetArgument.objects.create(snippet=style, position=0, name="mood", type="text")
    stored: list[object] = []
    monkeypatch.setattr(reviews, "store_payloads", lambda payloads: stored.append(payloads))
    with pytest.raises(InvalidEntry):
        reviews.request_publication(Snippet.objects.get(pk=style.pk), acting_user=make_user("Editors"), note="x")
    assert stored == []
