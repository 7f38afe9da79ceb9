"""Leases: which claim may still speak for a task."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from .statuses import TaskStatus

# Clients that never heartbeat (reference clients) keep their claim this long.
DEFAULT_LEASE = timedelta(minutes=30)
MAX_LEASE = timedelta(days=7)


def lease_is_live(
    status: TaskStatus,
    current: uuid.UUID | None,
    expires_at: datetime | None,
    offered: uuid.UUID,
    now: datetime,
) -> bool:
    """True while `offered` is the task's running claim and has not expired.

    Once the task is settled, reclaimed, or past its expiry (reaped or not yet),
    the lease is lost and nothing sent under it may change the task.
    """
    return (
        status is TaskStatus.IN_PROGRESS
        and current == offered
        and expires_at is not None
        and expires_at > now
    )
