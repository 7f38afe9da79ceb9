"""What a change tells the manager's metrics: tasks claimed, attempts settled and how
long the claim or report took.

Like announcements, a transaction records them in its info as it makes the changes, and
they are counted only once it has committed (a transaction retried after a deadlock
counts once; one rolled back, never). Work committed outside a transaction (a direct
statement) hands its own info to `Database.committed`. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jobnik_protocol.wire import SystemReason

# Info keys.
CLAIMED = "observed_claims"  # {stage type: tasks claimed}
SETTLED = "observed_settled"  # [Settled]
CLAIM_TOOK = "observed_claim_took"  # (stage types label, seconds)
REPORT_TOOK = "observed_report_took"  # seconds

Info = MutableMapping[str, Any]

# Reasons the manager gives when it fails an attempt itself; any other is the worker's.
_REASON_CLASSES = {
    SystemReason.LEASE_EXPIRED: "lease_expired",
    SystemReason.TIMED_OUT: "timed_out",
    SystemReason.DEADLINE_EXCEEDED: "deadline_exceeded",
}


def reason_class(reason: str | None) -> str:
    """A failure's reason as a bounded label: the manager's own, or "reported"."""
    return _REASON_CLASSES.get(reason or "", "reported")


@dataclass(frozen=True, slots=True)
class Settled:
    """One attempt's end: what was reported of it (COMPLETED, FAILED, or RETRIED for
    "try again later") and the status the task took (FAILED with attempts left is
    RETRIED), with its reason and the seconds from its claim."""

    stage_type: str
    reported: str
    status: str
    reason: str | None
    run_seconds: float | None


def claimed(info: Info, rows: Iterable[Any]) -> None:
    """Claimed rows (each with a `stage_type`)."""
    counts: dict[str, int] = info.setdefault(CLAIMED, {})
    for row in rows:
        counts[row.stage_type] = counts.get(row.stage_type, 0) + 1


def settled(
    info: Info, task: Any, reported: str, now: datetime, start_time: datetime | None
) -> None:
    """`task` (with `stage_type`, `status`, `reason`) as its report left it; the attempt
    began at `start_time`."""
    run = None if start_time is None else max((now - start_time).total_seconds(), 0.0)
    info.setdefault(SETTLED, []).append(
        Settled(task.stage_type, str(reported), str(task.status), task.reason, run)
    )
