"""A serving process freezes its start-up objects and collects young garbage less often."""

from __future__ import annotations

import gc

from config.gc_tuning import YOUNG_THRESHOLD, tune_for_serving


def test_tuning_for_serving_freezes_start_up_objects_and_raises_the_young_threshold():
    threshold = gc.get_threshold()
    try:
        tune_for_serving()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_the_asgi_entry_point_applies_the_tuning():
    import config.asgi  # noqa: F401  (imported by other tests too: the tuning may already be in force)

    assert gc.get_threshold()[0] == YOUNG_THRESHOLD or gc.get_freeze_count() > 0
