"""How the versions endpoint shows documents kept in the content store."""

from __future__ import annotations

import base64

import pytest
from rest_framework.test import APIClient

from tests.factories import PNG_1X1, make_resource, make_user, release

pytestmark = pytest.mark.django_db


def test_a_version_references_its_bytes_and_inlines_them_on_request():
    release(make_resource("docs://img", text="", data=PNG_1X1, mime_type="image/png"))
    client = APIClient()
    client.force_authenticate(make_user("Auditors"))
    from registry.models import Resource

    base = f"/api/v1/resources/{Resource.objects.get().pk}/versions/1/"
    plain = client.get(base)
    assert plain.status_code == 200
    assert "blob" not in plain.json()["snapshot"] and len(plain.json()["snapshot"]["sha256"]) == 64
    inline = client.get(base + "?content=inline").json()["snapshot"]
    assert inline["blob"] == base64.b64encode(PNG_1X1).decode() and "sha256" not in inline
