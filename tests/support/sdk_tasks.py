"""SDK Task models as a claim answers them, for unit tests of the Worker's parts."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from jobnik_sdk import Task


def a_claimed_task(**fields: Any) -> Task:
    """An IN_PROGRESS task of a new stage, made just now; `fields` set any others."""
    now = datetime.now(UTC)
    defaults: dict[str, Any] = {
        "id": uuid.uuid4(),
        "stage_id": uuid.uuid4(),
        "data": {},
        "status": "IN_PROGRESS",
        "creation_time": now,
        "update_time": now,
    }
    return Task(**(defaults | fields))
