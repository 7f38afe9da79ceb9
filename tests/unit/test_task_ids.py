"""New task ids: version 7, ascending within a create and from one create to the next
millisecond's, carrying the time they were made."""

from __future__ import annotations

import time
import uuid

from jobnik_manager.services.stages import new_task_ids


def test_a_creates_ids_are_version_7_ascending_and_distinct() -> None:
    before = time.time_ns() // 1_000_000
    ids = new_task_ids(50_000)
    after = time.time_ns() // 1_000_000
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert {(i.version, i.variant) for i in ids} == {(7, uuid.RFC_4122)}
    assert before <= ids[0].int >> 80 <= ids[-1].int >> 80 <= after


def test_a_later_creates_ids_sort_after_an_earlier_ones() -> None:
    first = new_task_ids(10)
    time.sleep(0.002)
    second = new_task_ids(10)
    assert max(first) < min(second)
    assert not set(first) & set(new_task_ids(10_000))
