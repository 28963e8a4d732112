"""A serving process freezes its start-up objects and runs older-generation passes rarely."""

from __future__ import annotations

import gc

from config.gc_tuning import OLDER_THRESHOLDS, YOUNG_THRESHOLD, tune_for_serving


def test_tuning_for_serving_freezes_start_up_objects_and_makes_older_passes_rare():
    threshold = gc.get_threshold()
    try:
        tune_for_serving()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
        assert OLDER_THRESHOLDS[0] > 10 and OLDER_THRESHOLDS[1] > 10
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_the_asgi_entry_point_applies_the_tuning():
    import config.asgi  # noqa: F401  (imported by other tests too: the tuning may already be in force)

    assert gc.get_threshold()[0] == YOUNG_THRESHOLD or gc.get_freeze_count() > 0


def test_young_garbage_is_collected_as_often_as_by_default():
    """Short-lived cycles in the response path hold a response's bytes until a young pass: with a
    young threshold of 10,000 a worker that served 50 blobs of 4 MiB held twice the memory
    (bench/scale.py --blobs 50)."""
    assert YOUNG_THRESHOLD <= 700
