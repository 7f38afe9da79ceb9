"""Errors raised by the SDK, and the ones a handler raises to steer its task's retries.

JobnikError
├── JobnikTransportError           the manager was not reached, or did not answer in time
├── ApiError                       the manager answered with an error: status_code, code, message
│   ├── AuthenticationError        401 UNAUTHORIZED: no token, or one the manager refuses
│   ├── PermissionDeniedError      403 FORBIDDEN: the token may not do this
│   ├── NotFoundError              404: JOB_NOT_FOUND, STAGE_NOT_FOUND, TASK_NOT_FOUND, ...
│   ├── JobnikValidationError      400 VALIDATION_ERROR: the request itself was malformed
│   ├── IllegalTransitionError     400 ILLEGAL_*: not allowed in the entity's current status
│   └── ConflictError              409: IDEMPOTENCY_KEY_REUSED, ...: the entity's state forbids it
│       └── LeaseLostError         409 LEASE_LOST: the claim expired, or the task moved on
└── WaitTimeoutError               wait() gave up before the job finished (also a TimeoutError)

TaskOutcome                        raised by a handler to steer its task (not a JobnikError,
│                                  so `except JobnikError` around client calls inside a
│                                  handler does not swallow it)
├── NonRetryableError              fail the task now, whatever attempts remain
└── RetryLaterError                offer the task again after `delay`, without spending an
                                   attempt

`JobnikTransportError` and `JobnikValidationError` were named `TransportError` and
`ValidationError`, as httpx and pydantic name errors of their own; `jobnik_sdk` answers
the old names, with a DeprecationWarning, until its next release.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx


class JobnikError(Exception):
    """Root of every error the SDK raises."""


class JobnikTransportError(JobnikError):
    """The manager could not be reached or did not answer in time, after any retries.

    The original httpx error is chained as `__cause__`.
    """


class ApiError(JobnikError):
    """The manager answered with an error status; its `{message, code}` body is kept."""

    def __init__(self, message: str, *, status_code: int, code: str) -> None:
        super().__init__(f"{status_code} {code}: {message}")
        self.message = message
        self.status_code = status_code
        self.code = code


class AuthenticationError(ApiError):
    """401: the manager wants a token and got none, or refuses the one it got (unknown,
    revoked or expired). Sending the call again cannot help, so it is not retried."""


class PermissionDeniedError(ApiError):
    """403: the token is valid but its role (or its stage types) does not allow the call.
    Not retried."""


class NotFoundError(ApiError):
    """404: the job, stage or task does not exist (or, on dequeue, no task is ready)."""


class JobnikValidationError(ApiError):
    """400 VALIDATION_ERROR: the manager refused the request as malformed."""


class IllegalTransitionError(ApiError):
    """400 ILLEGAL_*: the status change is not allowed from the entity's current status."""


class ConflictError(ApiError):
    """409: the request conflicts with the entity's current state, e.g.
    IDEMPOTENCY_KEY_REUSED (the key was first sent with another request)."""


class LeaseLostError(ConflictError):
    """409 LEASE_LOST: the lease a heartbeat or report named is no longer the task's.

    It expired (the attempt then counts as failed), or the task was settled or claimed
    again meanwhile. Whatever was sent under it changed nothing; stop working on it.
    """


class WaitTimeoutError(JobnikError, TimeoutError):
    """`wait()` ran out of time before the job reached a final status."""


class TaskOutcome(Exception):
    """Root of what a handler raises to steer its task's fate; the worker turns it into
    the task's report. Outside `JobnikError`, so a handler's `except JobnikError` around
    its own client calls cannot swallow it."""


class NonRetryableError(TaskOutcome):
    """Raise from a handler when trying the task again cannot succeed (bad input, say).

    The worker reports the task FAILED with `retryable: false`, so it fails at once
    whatever attempts remain, with the error's message as its `reason`.
    """


class RetryLaterError(TaskOutcome):
    """Raise from a handler to have the task offered again after `delay`, without
    spending one of its attempts (a rate limit, a resource not ready yet).

    The worker reports it RETRIED with `retryAfterSeconds` and `reason`. The manager
    takes delays of up to 7 days.
    """

    def __init__(self, delay: timedelta, reason: str | None = None) -> None:
        if not timedelta(0) <= delay <= timedelta(days=7):
            raise ValueError("a retry delay is between 0 and 7 days")
        super().__init__(reason or f"retry in {delay}")
        self.delay = delay
        self.reason = reason


def api_error(response: httpx.Response, *, secret: str | None = None) -> ApiError:
    """The ApiError for an error response, from its `{message, code}` body; `secret`
    (the client's token) is masked wherever the body repeats it."""
    message, code = _error_body(response)
    return error_for(response.status_code, code, redact(message, secret))


def redact(text: str, secret: str | None) -> str:
    """`text` with `secret` masked, for messages and logs that could otherwise show it."""
    return text.replace(secret, "***") if secret else text


def error_for(status_code: int, code: str, message: str) -> ApiError:
    """The ApiError subclass that an answer with this status and code maps to."""
    cls: type[ApiError]
    if status_code == 401:
        cls = AuthenticationError
    elif status_code == 403:
        cls = PermissionDeniedError
    elif status_code == 404:
        cls = NotFoundError
    elif status_code == 409:
        cls = LeaseLostError if code == "LEASE_LOST" else ConflictError
    elif code.startswith("ILLEGAL_"):
        cls = IllegalTransitionError
    elif status_code == 400 and code == "VALIDATION_ERROR":
        cls = JobnikValidationError
    else:
        cls = ApiError
    return cls(message, status_code=status_code, code=code)


def _error_body(response: httpx.Response) -> tuple[str, str]:
    # A proxy or load balancer in front of the manager may answer with HTML or nothing.
    fallback = (response.text[:500] or response.reason_phrase, f"HTTP_{response.status_code}")
    try:
        body: Any = response.json()
    except ValueError:
        return fallback
    if not isinstance(body, dict):
        return fallback
    message = body.get("message")
    code = body.get("code")
    return (
        str(message) if message is not None else fallback[0],
        str(code) if code is not None else fallback[1],
    )
