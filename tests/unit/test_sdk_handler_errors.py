"""What a handler raises to steer its task stands apart from the client's errors."""

from __future__ import annotations

from datetime import timedelta

from jobnik_sdk import JobnikError, NonRetryableError, RetryLaterError, TaskOutcome


def test_a_handler_catching_client_errors_does_not_swallow_its_own_decision() -> None:
    caught_by_client_except: list[str] = []
    for decision in (NonRetryableError("bad input"), RetryLaterError(timedelta(seconds=5))):
        try:
            try:
                raise decision
            except JobnikError:  # what a handler writes around its own client calls
                caught_by_client_except.append(type(decision).__name__)
        except TaskOutcome as outcome:
            assert outcome is decision
    assert caught_by_client_except == []
    assert not issubclass(TaskOutcome, JobnikError)
