"""The one place that decides whether something is tried again, and when.

`retrying` is the one helper every retry in the SDK runs on: tenacity, paced by a
`Backoff`, sleeping on the caller's clock, with an explicit should-retry predicate.
Requests to the manager and the wake-up listener's reconnects use it.

Requests: only failures that may pass are retried: connection errors, timeouts, and 502/503/504
from a proxy or a manager that is starting or overloaded. Any other answer, 4xx above
all, is final. A request whose repetition could do something twice is retried only
when it surely never reached the server: a POST without an `Idempotency-Key` (unless
the call is harmless to repeat by nature, as a heartbeat is), and a claim (the dequeue
PATCH, the batch claim POST), which takes tasks that a lost answer would leave held by
nobody until their lease runs out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from typing import Any

import httpx
from tenacity import AsyncRetrying, RetryCallState, stop_after_attempt, stop_never
from tenacity.stop import StopBaseT

from ._backoff import Backoff
from ._clock import SYSTEM_CLOCK, Clock
from ._exceptions import redact

log = logging.getLogger("jobnik_sdk.retry")

RETRY_STATUSES = frozenset({502, 503, 504})
# The request was never written to a connection, so sending it again cannot repeat it.
_UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# The request may have reached the server; only a repeatable request is sent again.
_MAYBE_SENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def retrying(
    *,
    backoff: Backoff,
    should_retry: Callable[[RetryCallState], bool],
    stop: StopBaseT = stop_never,
    step: Callable[[RetryCallState], int] = lambda state: state.attempt_number,
    before_sleep: Callable[[RetryCallState], None] | None = None,
    give_up: Callable[[RetryCallState], Any] | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> AsyncRetrying:
    """Tries that go on while `should_retry` says so of the last one's outcome, until
    `stop`, waiting `backoff`'s delay for the `step`-th retry (by default the number of
    tries made) on `clock`. `give_up` turns the last outcome into the result once
    `stop` ends it (tenacity raises RetryError without it); `before_sleep` sees each
    outcome that is retried, e.g. to log it."""
    return AsyncRetrying(
        stop=stop,
        wait=lambda state: backoff.delay(step(state)).total_seconds(),
        retry=should_retry,
        sleep=clock.sleep,
        before_sleep=before_sleep,
        retry_error_callback=give_up,
    )


def _default_backoff() -> Backoff:
    return Backoff(
        initial=timedelta(milliseconds=200),
        maximum=timedelta(seconds=5),
        multiplier=2.0,
        jitter=0.5,
    )


@dataclass(frozen=True, slots=True)
class RequestRetryPolicy:
    """How often and how patiently a failed request is sent again.

    `max_attempts` counts the first try; 1 turns retries off. Which failures are
    retried is fixed by the SDK (connection errors, timeouts, 502/503/504, with the
    limits on POST and dequeue described in the docs), not part of the policy.
    """

    max_attempts: int = 5
    backoff: Backoff = field(default_factory=_default_backoff)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts counts the first try and must be at least 1")


class Replay(Enum):
    """How safe it is to send a request again."""

    IDEMPOTENT = "idempotent"  # repeating it has the effect of sending it once
    UNSENT_ONLY = "unsent_only"  # only if it surely never reached the server


def replay_for(
    method: str, *, has_idempotency_key: bool, claims: bool, repeatable: bool = False
) -> Replay:
    """GET, PUT, PATCH and DELETE repeat safely; a POST only with an idempotency key or
    when it is `repeatable` by nature (a heartbeat, a batch of reports, which settle
    nothing twice); a claim never once it may have been received."""
    if claims:
        return Replay.UNSENT_ONLY
    if method.upper() == "POST" and not (has_idempotency_key or repeatable):
        return Replay.UNSENT_ONLY
    return Replay.IDEMPOTENT


def should_retry(
    replay: Replay, *, error: BaseException | None = None, status: int | None = None
) -> bool:
    """Whether an attempt that raised `error` or answered `status` is worth repeating."""
    if error is not None:
        if isinstance(error, _UNSENT):
            return True
        return replay is Replay.IDEMPOTENT and isinstance(error, _MAYBE_SENT)
    return replay is Replay.IDEMPOTENT and status in RETRY_STATUSES


async def send_with_retries(
    send: Callable[[], Awaitable[httpx.Response]],
    *,
    replay: Replay,
    policy: RequestRetryPolicy,
    secret: str | None = None,
) -> httpx.Response:
    """Run `send` until it answers with something final or the attempts are spent.

    Returns the last response (even a retryable error status, for the caller to map)
    or raises the last transport error. `secret` (the client's token) is masked in the
    log lines, should an error's text repeat it.
    """
    # The first try goes without tenacity, whose machinery costs about a third of what
    # the request itself costs the client: only a try worth repeating pays for it.
    try:
        response = await send()
    except Exception as exc:
        if policy.max_attempts == 1 or not should_retry(replay, error=exc):
            raise
        first = redact(repr(exc), secret)
    else:
        if policy.max_attempts == 1 or not should_retry(replay, status=response.status_code):
            return response
        first = str(response.status_code)
    delay = policy.backoff.delay(1).total_seconds()
    log.info("attempt 1 failed (%s); retrying in %.2fs", first, delay)
    await asyncio.sleep(delay)
    return await _send_again(send, replay=replay, policy=policy, secret=secret)


async def _send_again(
    send: Callable[[], Awaitable[httpx.Response]],
    *,
    replay: Replay,
    policy: RequestRetryPolicy,
    secret: str | None,
) -> httpx.Response:
    """The tries after the first, numbered from 2 in the log and the backoff."""

    def retry(state: RetryCallState) -> bool:
        outcome = state.outcome
        if outcome is None:
            return False
        if outcome.failed:
            return should_retry(replay, error=outcome.exception())
        response: httpx.Response = outcome.result()
        return should_retry(replay, status=response.status_code)

    def give_up(state: RetryCallState) -> httpx.Response:
        assert state.outcome is not None
        response: httpx.Response = state.outcome.result()  # re-raises a transport error
        return response

    def before_sleep(state: RetryCallState) -> None:
        outcome = state.outcome
        what = (
            redact(repr(outcome.exception()), secret)
            if outcome is not None and outcome.failed
            else (outcome.result().status_code if outcome is not None else "?")
        )
        log.info(
            "attempt %d failed (%s); retrying in %.2fs",
            state.attempt_number + 1,
            what,
            state.upcoming_sleep,
        )

    tries = retrying(
        backoff=policy.backoff,
        should_retry=retry,
        stop=stop_after_attempt(policy.max_attempts - 1),
        step=lambda state: state.attempt_number + 1,
        before_sleep=before_sleep,
        give_up=give_up,
    )
    response: httpx.Response = await tries(send)
    return response
