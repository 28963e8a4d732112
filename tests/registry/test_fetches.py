import pytest

from registry.models import FetchCounter
from registry.serving import fetches
from registry.serving.items import Served
from registry.serving.viewer import Viewer


@pytest.mark.django_db
def test_fetches_are_counted_per_client_entry_and_version_on_flush():
    served = Served({}, "prompt", "greet", 3, "production")
    desk = Viewer(client_id=None, client_name="desk")
    for _ in range(3):
        fetches.record_fetch(served, desk)
    fetches.record_fetch(served, Viewer())
    assert FetchCounter.objects.count() == 0  # nothing written on the request path
    assert fetches.flush() == 2
    fetches.record_fetch(served, desk)
    fetches.flush()
    counts = {(c.client_name, c.version): c.count for c in FetchCounter.objects.all()}
    assert counts == {("desk", 3): 4, ("", 3): 1}


@pytest.mark.django_db(transaction=True)
def test_a_deleted_client_neither_blocks_nor_double_counts_the_others():
    from registry.serving.clients import create_client

    client, _ = create_client(name="gone-soon")
    served = Served({}, "prompt", "greet", 1, "production")
    fetches.record_fetch(served, Viewer())
    fetches.record_fetch(served, Viewer(client_id=client.pk, client_name="gone-soon"))
    client.delete()
    for _ in range(3):
        fetches.flush()
    counts = {(c.client_name, c.client_id): c.count for c in FetchCounter.objects.all()}
    assert counts == {("", None): 1, ("gone-soon", None): 1}
