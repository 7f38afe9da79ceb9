"""What a task's worker may add to its job's history, beside the status changes."""

from __future__ import annotations

from enum import StrEnum

# A task event's fields, as JSON, at the most: they are history, not a data store.
MAX_FIELDS_BYTES = 16 * 1024


class EventLevel(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
