"""Resource URIs are strict RFC 3986 and stored normalised, so every client reads what it lists."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from registry.models import Resource, ResourceTemplate
from registry.portable.importer import ImportFailed, import_documents
from registry.release import services
from registry.serving.catalogs import catalog_for
from registry.serving.viewer import Viewer
from tests.factories import make_resource, make_template

pytestmark = pytest.mark.django_db


def test_a_resource_is_stored_and_served_under_its_normal_form_and_found_by_any_spelling():
    resource = make_resource("HTTPS://Docs.Example.COM", text="hello")
    assert resource.uri == "https://docs.example.com/"
    services.publish(resource, acting_user=None, note="v1")
    catalog = catalog_for("production")
    assert [r["uri"] for r in catalog.resources(Viewer())] == ["https://docs.example.com/", "registry://changes/recent"]
    for spelling in ("https://docs.example.com/", "https://DOCS.example.com", "https://docs.example.com:443/"):
        assert catalog.read_resource(Viewer(), spelling).result["contents"][0]["text"] == "hello"


def test_what_python_clients_send_back_is_what_we_list():
    """pydantic's AnyUrl (the Python SDK's URI type) re-serialises listed URIs; ours survive unchanged."""
    pydantic = pytest.importorskip("pydantic")
    for uri in ("HTTPS://Docs.Example.COM", "docs://caf%C3%A9/men%C3%BC", "test://static-text", "https://x.org/a%2Fb"):
        stored = make_resource(uri).uri
        assert str(pydantic.AnyUrl(stored)) == stored


def test_templates_match_uris_in_any_spelling():
    template = make_template("Tickets://Board/{id}", body="Ticket {{ id }}")
    assert template.uri_template == "tickets://board/{id}"
    services.publish(template, acting_user=None, note="v1")
    served = catalog_for("production").read_resource(Viewer(), "TICKETS://board/42")
    assert served.result["contents"][0]["text"] == "Ticket 42"


def test_the_importer_refuses_an_iri_naming_the_line_and_the_encoded_form(tmp_path):
    path = tmp_path / "iri.yaml"
    path.write_text("resources:\n  - uri: docs://café/menü\n    name: menu\n    text: Soup\n", encoding="utf-8")
    with pytest.raises(ImportFailed) as failure:
        import_documents(path)
    assert "iri.yaml:2" in str(failure.value) and "docs://caf%C3%A9/men%C3%BC" in str(failure.value)
    assert not Resource.objects.exists()


def test_the_migration_normalises_rows_and_reports_collisions(capsys):
    normalise = importlib.import_module("registry.migrations.0009_normalise_uris")
    ok = make_resource("docs://ok")
    for index, uri in enumerate(("docs://café", "DOCS://Clash", "docs://clash")):
        row = make_resource(f"docs://placeholder-{index}")
        with connection.cursor() as cursor:  # as written before URIs were normalised on save
            cursor.execute(f"UPDATE {Resource._meta.db_table} SET uri = %s WHERE id = %s", [uri, row.pk])
    historical = MigrationLoader(connection).project_state(("registry", "0009_normalise_uris")).apps
    normalise.forwards(historical, None)
    uris = set(Resource.objects.values_list("uri", flat=True))
    assert uris == {ok.uri, "docs://caf%C3%A9", "DOCS://Clash", "docs://clash"}
    assert "'DOCS://Clash'" in capsys.readouterr().out
    assert not ResourceTemplate.objects.exists()
