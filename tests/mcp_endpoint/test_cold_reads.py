"""prompts/get and resources/read while no catalog is built: one entry read from the database
when it alone answers, the whole catalog (built in the background) otherwise."""

from __future__ import annotations

import pytest

from mcp_endpoint.handlers import reads
from mcp_endpoint.handlers.catalogs import reset_caches
from mcp_endpoint.handlers.prompts import prompts_get
from mcp_endpoint.handlers.resources import resources_read
from registry import changes
from registry import errors as registry_errors
from registry.serving import catalogs, warmup
from tests.mcp_endpoint.test_pagination_cold import ctx

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cold(registry_data, monkeypatch):
    """As just after a start, with the catalog's build recorded instead of run."""
    warmup.join()
    changes.bump_generation()
    reset_caches()
    calls = {"built": [], "warmed": []}
    real = catalogs.load_catalog
    monkeypatch.setattr(catalogs, "load_catalog", lambda label: calls["built"].append(label) or real(label))
    monkeypatch.setattr(reads.source, "warm_catalog",
                        lambda label: calls["warmed"].append(label) or warmup.warm(label))
    return calls


async def test_first_prompts_get_after_start_does_not_wait_for_the_whole_catalog(cold):
    result = await prompts_get(ctx(), {"name": "test_simple_prompt"})
    assert result["messages"][0]["content"]["text"] == "This is a simple prompt for testing."
    assert cold["warmed"] == ["production"]
    warmup.join()
    assert cold["built"] == ["production"]  # in the background, after the answer


async def test_first_resources_read_after_start_does_not_wait_for_the_whole_catalog(cold):
    result = await resources_read(ctx(), {"uri": "test://static-text"})
    assert b"This is the content of the static text resource." in result.data
    assert cold["warmed"] == ["production"]


async def test_a_read_the_entry_alone_cannot_answer_waits_for_the_whole_catalog(cold):
    with pytest.raises(registry_errors.UnknownPrompt):
        await prompts_get(ctx(), {"name": "no-such-prompt"})
    assert cold["built"] == ["production"]
    reset_caches()
    changes.bump_generation()
    result = await resources_read(ctx(), {"uri": "test://template/7/data"})  # a template's URI
    assert "7" in result.data.decode()
    assert cold["built"] == ["production", "production"]
