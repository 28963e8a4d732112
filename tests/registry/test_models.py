import pytest
from django.core.exceptions import ValidationError
from django.db.models import ProtectedError

from registry.errors import ImmutableVersionError
from registry.models import AuditEntry, Prompt, PromptVersion
from registry.release import services
from tests.factories import make_prompt, make_resource


@pytest.fixture
def published(db):
    prompt = make_prompt("greet")
    return services.publish(prompt, acting_user=None, note="first")


def test_published_version_cannot_be_changed(published):
    published.change_note = "rewritten history"
    with pytest.raises(ImmutableVersionError):
        published.save()


def test_published_version_cannot_be_deleted_one_by_one_or_in_bulk(published):
    with pytest.raises(ImmutableVersionError):
        published.delete()
    with pytest.raises(ImmutableVersionError):
        PromptVersion.objects.all().delete()
    with pytest.raises(ImmutableVersionError):
        PromptVersion.objects.update(change_note="x")
    assert PromptVersion.objects.get().change_note == "first"


def test_entry_with_published_versions_cannot_be_deleted(published):
    with pytest.raises(ProtectedError):
        Prompt.objects.get(name="greet").delete()


def test_audit_entries_are_append_only(published):
    entry = AuditEntry.objects.first()
    entry.note = "edited"
    with pytest.raises(ImmutableVersionError):
        entry.save()
    with pytest.raises(ImmutableVersionError):
        entry.delete()
    with pytest.raises(ImmutableVersionError):
        AuditEntry.objects.all().delete()


@pytest.mark.parametrize("name", ["has space", "", "x" * 129, "semi;colon"])
def test_prompt_names_are_validated(db, name):
    with pytest.raises(ValidationError):
        Prompt(name=name, description="d").full_clean()


@pytest.mark.django_db
def test_resource_uri_is_validated():
    resource = make_resource("docs://fine")
    resource.uri = "docs://../escape"
    with pytest.raises(ValidationError):
        resource.full_clean()


@pytest.mark.django_db
def test_tags_are_normalised():
    prompt = make_prompt(tags="Support, billing ,support")
    assert prompt.tags == "billing, support"
    assert prompt.tag_set == {"billing", "support"}
