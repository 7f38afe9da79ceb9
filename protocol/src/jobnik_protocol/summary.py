"""A stage's summary: how many of its tasks stand in each status.

`Summary`'s fields are the one definition of the counters (`COUNTERS`, in the wire's
order): the manager's stage columns, its counts kept in SQL and its answers follow them,
and the SDK reads a stage's summary into this same class. Each counts the tasks of one
status and is named as that status in lower case (`summary_field`). On the wire the names
are camelCase (`inProgress`) and `total` is sent beside them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from .wire import TaskStatus

__all__ = ["COUNTERS", "Summary", "summary_field"]


@dataclass(frozen=True, slots=True)
class Summary:
    """Counts of a stage's tasks by status. `total` is always the sum of the counts."""

    pending: int = 0
    in_progress: int = 0
    completed: int = 0
    failed: int = 0
    created: int = 0
    retried: int = 0
    # Not in the reference Jobnik API: a v1 answer may lack it.
    aborted: int = 0

    @property
    def total(self) -> int:
        return sum(self.counts().values())

    @property
    def open(self) -> int:
        """Its tasks not final yet: still to run, running or to run again."""
        return self.created + self.pending + self.in_progress + self.retried

    def counts(self) -> dict[str, int]:
        """The counters by name, in `COUNTERS` order."""
        return {name: getattr(self, name) for name in COUNTERS}

    @classmethod
    def of(cls, counts: Mapping[TaskStatus, int]) -> Summary:
        return cls(**{summary_field(s): n for s, n in counts.items()})

    @classmethod
    def of_columns(cls, row: object) -> Summary:
        """The summary held in attributes named as the counters (a stage's row)."""
        return cls(**{name: getattr(row, name) for name in COUNTERS})


COUNTERS: tuple[str, ...] = tuple(f.name for f in fields(Summary))

_FIELD_OF = {status: status.value.lower() for status in TaskStatus}
if sorted(_FIELD_OF.values()) != sorted(COUNTERS):
    raise AssertionError("one summary counter per task status, named as the status")


def summary_field(status: TaskStatus) -> str:
    """The summary counter (and stage column) holding tasks of `status`."""
    return _FIELD_OF[status]
