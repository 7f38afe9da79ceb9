"""The fake manager's refusals: each is answered as the manager answers it, with its
HTTP status and `{message, code}`."""

from __future__ import annotations


class Refused(Exception):
    """A request the fake manager refuses."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, str]:
        return {"message": self.message, "code": self.code}


def invalid(message: str) -> Refused:
    return Refused(400, "VALIDATION_ERROR", message)


def rule(message: str, code: str) -> Refused:
    """Well formed, but not allowed in the entity's current state."""
    return Refused(400, code, message)


def illegal(entity: str, current: str, target: str) -> Refused:
    return rule(
        f"Illegal status transition from {current} to {target}",
        f"ILLEGAL_{entity}_STATUS_TRANSITION",
    )


def not_found(kind: str, message: str | None = None) -> Refused:
    return Refused(404, f"{kind.upper()}_NOT_FOUND", message or f"{kind} not found")


def lease_lost() -> Refused:
    return Refused(
        409,
        "LEASE_LOST",
        "The lease is no longer held: it expired, or the task was reclaimed or settled",
    )
