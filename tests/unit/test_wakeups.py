"""Long-poll wake-ups (dispatch/wakeups.py): tasks that became claimable wake as many
waiting claims of their type as there are tasks, the longest waiting first, and a woken
claim whose client left passes its wake-up on; replicas' NOTIFY payloads are read in
the new form and the old."""

from __future__ import annotations

from contextlib import ExitStack

from jobnik_manager.dispatch.wakeups import ReadyWaiters, Waiter, parse_ready, ready_payload
from jobnik_manager.domain.announcements import EVERY


def waiting(waiters: ReadyWaiters, stack: ExitStack, *types: str) -> Waiter:
    return stack.enter_context(waiters.waiting(types))


def awake(*all_waiters: Waiter) -> list[bool]:
    return [w.event.is_set() for w in all_waiters]


def test_a_task_wakes_one_claim_the_longest_waiting_first() -> None:
    waiters = ReadyWaiters()
    with ExitStack() as stack:
        a, b, c = (waiting(waiters, stack, "tiles") for _ in range(3))
        other = waiting(waiters, stack, "exports")
        waiters.wake({"tiles": 1})
        assert awake(a, b, c, other) == [True, False, False, False]
        # One already awake is not counted again: two tasks wake the next two.
        waiters.wake({"tiles": 2})
        assert awake(a, b, c) == [True, True, True]


def test_every_claim_of_a_type_wakes_for_a_resumed_type() -> None:
    waiters = ReadyWaiters()
    with ExitStack() as stack:
        many = [waiting(waiters, stack, "tiles") for _ in range(50)]
        waiters.wake({"tiles": EVERY})
        assert all(awake(*many))


def test_a_claim_of_several_types_wakes_for_any_of_them_and_gone_ones_are_forgotten() -> None:
    waiters = ReadyWaiters()
    with ExitStack() as stack:
        both = waiting(waiters, stack, "tiles", "exports")
        with waiters.waiting(["exports"]):
            pass  # came and went: never woken, never counted
        waiters.wake({"exports": 1})
        assert awake(both) == [True]


def test_a_woken_claim_that_leaves_passes_its_wake_up_on() -> None:
    waiters = ReadyWaiters()
    with ExitStack() as stack:
        first, second = waiting(waiters, stack, "tiles"), waiting(waiters, stack, "tiles")
        waiters.wake({"tiles": 1})
        waiters.pass_on(first)
        assert awake(first, second) == [True, True]


def test_notify_payloads_carry_any_type_and_fall_back_to_every_waiter_when_too_long() -> None:
    ready = {"tiles": 3, "a,b:2": 1, 'q"{}': 2, "ünï": 1}
    assert parse_ready(ready_payload(ready)) == ready
    many = {f"{i:03d}-{'x' * 46}": 1 for i in range(200)}  # 11 kB of counts
    assert ready_payload(many) == "*" and parse_ready("*") is None
    fits = {f"{i:03d}-{'x' * 46}": 1 for i in range(100)}
    assert parse_ready(ready_payload(fits)) == fits
    assert parse_ready("{not json") is None


def test_an_earlier_versions_payloads_count_by_type_and_a_bare_type_wakes_all() -> None:
    assert parse_ready("tiles:3,exports:1") == {"tiles": 3, "exports": 1}
    assert parse_ready("a:b:2") == {"a:b": 2}
    assert parse_ready("tiles") == {"tiles": EVERY}  # an older replica's
    assert parse_ready("tiles:1,tiles:2") == {"tiles": 3}
    assert parse_ready("") == {}
