"""Stage summaries (task counts by status) and the percentages derived from them."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from .statuses import TaskStatus

# Summary field for each task status; the wire names are camelCase.
_FIELD_OF = {
    TaskStatus.CREATED: "created",
    TaskStatus.PENDING: "pending",
    TaskStatus.IN_PROGRESS: "in_progress",
    TaskStatus.RETRIED: "retried",
    TaskStatus.COMPLETED: "completed",
    TaskStatus.FAILED: "failed",
    TaskStatus.ABORTED: "aborted",
}


@dataclass(frozen=True, slots=True)
class Summary:
    """Counts of a stage's tasks by status. `total` is always the sum of the counts."""

    pending: int = 0
    in_progress: int = 0
    completed: int = 0
    failed: int = 0
    created: int = 0
    retried: int = 0
    aborted: int = 0

    @property
    def total(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self))

    def count(self, status: TaskStatus) -> int:
        return int(getattr(self, _FIELD_OF[status]))

    def added(self, status: TaskStatus, n: int = 1) -> Summary:
        name = _FIELD_OF[status]
        value = getattr(self, name) + n
        if value < 0:
            raise ValueError(f"summary count {name} would go negative")
        return replace(self, **{name: value})

    def moved(self, source: TaskStatus, target: TaskStatus, n: int = 1) -> Summary:
        return self.added(source, -n).added(target, n)

    @classmethod
    def of(cls, counts: dict[TaskStatus, int]) -> Summary:
        return cls(**{_FIELD_OF[s]: n for s, n in counts.items()})

    @property
    def all_completed(self) -> bool:
        return self.total > 0 and self.completed == self.total


def summary_field(status: TaskStatus) -> str:
    """The summary column holding tasks of `status`."""
    return _FIELD_OF[status]


def percentage(done: int, total: int) -> int:
    """floor(100 * done / total); 0 for an empty whole."""
    if total <= 0:
        return 0
    return (100 * done) // total
