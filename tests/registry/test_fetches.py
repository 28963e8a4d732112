import pytest

from registry import fetches
from registry.catalog import Served, Viewer
from registry.models import FetchCounter


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
