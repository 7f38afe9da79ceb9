"""A task's place in the claim order: `priority_rank`, lower claimed first (the claim
index is (stage type, priority_rank, seq)). Pure.

The Open Job Spec orders by a number, higher first (-100 to 100 here); v1 by five
priorities. Both are one scale: a number n ranks at MIDDLE - n, and each v1 priority at
the number an OJS job of that priority would bring (the middle of the band `ojs.priority_of`
reads it as: VERY_HIGH 50, HIGH 10, MEDIUM 0, LOW -10, VERY_LOW -50). So v1's five keep
their order and their meaning (a MEDIUM job and an OJS job of priority 0 are taken oldest
first, as before), and OJS numbers order among themselves one by one. The ranks lie in
100..300, apart from the 0..4 that v1's priorities had before migration 0018, so the
migration that moves them can run again on a table it half did."""

from __future__ import annotations

from .statuses import Priority

MIDDLE = 200
LOWEST, HIGHEST = -100, 100  # the OJS numbers taken

NUMBER = {
    Priority.VERY_HIGH: 50,
    Priority.HIGH: 10,
    Priority.MEDIUM: 0,
    Priority.LOW: -10,
    Priority.VERY_LOW: -50,
}


def rank_of_number(number: int) -> int:
    """An OJS priority's rank: higher numbers first."""
    return MIDDLE - number


def rank_of(priority: Priority, number: int | None = None) -> int:
    """A task's rank: its job's own number when it brought one (an OJS job), else its
    v1 priority's."""
    return rank_of_number(NUMBER[priority] if number is None else number)
