"""Applied change-log ids: no committed id is skipped, whatever order ids commit in."""

from __future__ import annotations

from mcp_endpoint.notify.applied import AppliedIds


def test_a_low_id_committed_after_higher_ones_is_still_new():
    ids = AppliedIds(0)
    assert ids.claim([1500, 1501]) == [1500, 1501]  # a short transaction with high ids commits first
    ids.done([1500, 1501])
    assert ids.floor == 0 and len(ids.gaps) == 1499
    assert ids.is_new(3) and ids.claim([3, 4]) == [3, 4]  # the long one, 1,497 ids further down
    ids.done([3, 4])
    assert not ids.is_new(3) and not ids.is_new(1500)


def test_the_floor_rises_over_applied_ids_and_stops_at_a_gap():
    ids = AppliedIds(10)
    ids.done(ids.claim([11, 12, 14]))
    assert ids.floor == 12 and set(ids.gaps) == {13}
    ids.done(ids.claim([13]))
    assert ids.floor == 14 and not ids.gaps and not ids.pending


def test_a_claimed_id_holds_the_floor_until_it_is_done():
    ids = AppliedIds(0)
    ids.claim([1, 2])
    assert ids.floor == 0 and ids.floor_if_done([1, 2]) == 2
    ids.done([1])
    assert ids.floor == 1


def test_a_released_id_is_wanted_again_even_after_later_ids_are_done():
    ids = AppliedIds(0)
    ids.claim([1])
    ids.done(ids.claim([2, 3]))
    ids.release([1])  # its delivery failed
    assert ids.floor == 0 and 1 in ids.gaps and ids.is_new(1)
    ids.done(ids.claim([1]))
    assert ids.floor == 3


def test_gaps_older_than_the_bound_are_given_up_and_reported():
    ids = AppliedIds(0)
    ids.done(ids.claim([5], now=100.0))
    assert ids.expire(60, now=150.0) == []
    assert ids.expire(60, now=161.0) == [1, 2, 3, 4]  # e.g. rolled-back transactions
    assert ids.floor == 5 and not ids.gaps


def test_seeding_treats_missing_recent_ids_as_transactions_in_flight():
    ids = AppliedIds(90)
    ids.seed([91, 92, 94, 100], 100)
    assert ids.floor == 92 and set(ids.gaps) == {93, 95, 96, 97, 98, 99}
    assert not ids.is_new(100) and ids.is_new(95)


def test_a_huge_jump_in_ids_is_bounded_and_asks_for_a_consistency_check():
    from mcp_endpoint.notify.applied import MAX_GAPS

    ids = AppliedIds(0)
    ids.done(ids.claim([10 * MAX_GAPS]))
    assert len(ids.gaps) == MAX_GAPS and ids.take_doubt() and not ids.take_doubt()
