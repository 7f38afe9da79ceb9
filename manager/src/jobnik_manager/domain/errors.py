"""Domain errors. Each carries the wire `code` and the HTTP status it maps to."""

from __future__ import annotations


class DomainError(Exception):
    """Root of every error the manager reports to a client as `{message, code}`."""

    code = "UNKNOWN_ERROR"
    http_status = 500
    # What it says when raised without a message of its own.
    default_message = "Unexpected error"

    def __init__(self, message: str | None = None, *, code: str | None = None) -> None:
        if message is None:
            message = self.default_message
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class NotFound(DomainError):
    http_status = 404


class JobNotFound(NotFound):
    code = "JOB_NOT_FOUND"
    default_message = "Job not found"


class StageNotFound(NotFound):
    code = "STAGE_NOT_FOUND"
    default_message = "Stage not found"


class TaskNotFound(NotFound):
    code = "TASK_NOT_FOUND"
    default_message = "Task not found"


class RuleViolation(DomainError):
    """A request that is well formed but not allowed in the entity's current state."""

    http_status = 400


class IllegalTransition(RuleViolation):
    def __init__(self, entity: str, current: str, target: str) -> None:
        super().__init__(
            f"Illegal status transition from {current} to {target}",
            code=f"ILLEGAL_{entity}_STATUS_TRANSITION",
        )


class Conflict(DomainError):
    http_status = 409


class LeaseLost(Conflict):
    code = "LEASE_LOST"
    default_message = (
        "The lease is no longer held: it expired, or the task was reclaimed or settled"
    )


class IdempotencyKeyReused(Conflict):
    code = "IDEMPOTENCY_KEY_REUSED"
    default_message = "This Idempotency-Key was already used for a different request"


class TokenNameTaken(Conflict):
    code = "TOKEN_NAME_TAKEN"
