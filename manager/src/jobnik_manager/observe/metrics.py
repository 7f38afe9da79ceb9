"""The manager's Prometheus metrics, counted in this process.

Counters and histograms count what this process did (a Prometheus query sums them over
replicas); with PROMETHEUS_MULTIPROC_DIR set (`serve --workers N`), the processes of one
server share them through that directory. What the database holds (ready tasks, the
oldest one's age, jobs and stages by status, the outbox) is read at scrape time by
`collector.StateCollector` instead: the same from every replica, so it is exported by
whichever is scraped, not summed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import Counter, Histogram, disable_created_metrics
from sqlalchemy.ext.asyncio import AsyncSession

from jobnik_protocol.wire import SystemReason

from ..domain import observations
from ..domain.statuses import TaskStatus

# A scrape answers the values; the `_created` series would double it for no reader.
disable_created_metrics()  # type: ignore[no-untyped-call]

# Seconds: from a claim or report answered in a millisecond to one a minute long.
_LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
# Seconds: a task's run, from under a second to a day.
_RUN = (0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600)

CLAIMS = Counter("jobnik_task_claims", "Tasks handed out to workers", ["stage_type"])
COMPLETIONS = Counter("jobnik_task_completions", "Tasks that ended COMPLETED", ["stage_type"])
FAILURES = Counter(
    "jobnik_task_failures",
    "Failed attempts, whether retried or final, by why they failed: reported by the worker, "
    "lease_expired, timed_out, deadline_exceeded",
    ["stage_type", "reason_class", "final"],
)
RETRIES = Counter(
    "jobnik_task_retries", "Attempts that ended RETRIED (to be claimed again)", ["stage_type"]
)
REAPED = Counter(
    "jobnik_leases_reaped", "Claims whose lease ran out without a report", ["stage_type"]
)
TIMEOUTS = Counter(
    "jobnik_task_timeouts", "Attempts failed for running past their time limit", ["stage_type"]
)
RUN_SECONDS = Histogram(
    "jobnik_task_run_seconds",
    "A task's attempt from its claim to its settlement",
    ["stage_type", "status"],
    buckets=_RUN,
)
CLAIM_SECONDS = Histogram(
    "jobnik_claim_latency_seconds",
    "Time to answer a claim (dequeue or batch claim), long-poll waits excluded",
    ["stage_type"],
    buckets=_LATENCY,
)
REPORT_SECONDS = Histogram(
    "jobnik_report_latency_seconds",
    "Time to answer a task report (one task or a batch)",
    buckets=_LATENCY,
)
HTTP_REQUESTS = Counter(
    "jobnik_http_requests", "HTTP requests answered", ["method", "route", "status"]
)
HTTP_SECONDS = Histogram(
    "jobnik_http_request_duration_seconds",
    "Time to answer an HTTP request",
    ["method", "route"],
    buckets=_LATENCY,
)
RELAY_LAG = Histogram(
    "jobnik_relay_publish_lag_seconds",
    "From a message's commit to its publication on the broker",
    buckets=_LATENCY,
)
RELAY_PUBLISHED = Counter("jobnik_relay_published", "Messages published on the broker")


class MetricsHook:
    """A transaction hook that counts what each committed transaction observed
    (`domain.observations`)."""

    info: Mapping[str, Any] = {}

    async def before_commit(self, s: AsyncSession) -> None:
        return None

    def after_commit(self, info: Mapping[str, Any]) -> None:
        for stage_type, n in info.get(observations.CLAIMED, {}).items():
            CLAIMS.labels(stage_type).inc(n)
        settled = info.get(observations.SETTLED)
        if settled:
            _count(settled)
        took = info.get(observations.CLAIM_TOOK)
        if took is not None:
            CLAIM_SECONDS.labels(took[0]).observe(took[1])
        took = info.get(observations.REPORT_TOOK)
        if took is not None:
            REPORT_SECONDS.observe(took)


def _count(settled: list[observations.Settled]) -> None:
    # A report batch settles up to a hundred attempts, mostly of one type and outcome:
    # each label set is looked up once (a lookup costs more than the increment).
    runs: dict[tuple[str, str], list[float]] = {}
    completed: dict[str, int] = {}
    for s in settled:
        if s.run_seconds is not None:
            runs.setdefault((s.stage_type, s.status), []).append(s.run_seconds)
        if s.status == TaskStatus.COMPLETED:
            completed[s.stage_type] = completed.get(s.stage_type, 0) + 1
        else:
            _count_unfinished(s)
    for (stage_type, status), seconds in runs.items():
        histogram = RUN_SECONDS.labels(stage_type, status)
        for value in seconds:
            histogram.observe(value)
    for stage_type, n in completed.items():
        COMPLETIONS.labels(stage_type).inc(n)


def _count_unfinished(s: observations.Settled) -> None:
    """An attempt that did not complete: retried, failed, or put back."""
    if s.status == TaskStatus.RETRIED:
        RETRIES.labels(s.stage_type).inc()
    if s.reported != TaskStatus.FAILED:
        return  # "try again later", or a cancel
    kind = observations.reason_class(s.reason)
    FAILURES.labels(s.stage_type, kind, str(s.status == TaskStatus.FAILED).lower()).inc()
    if s.reason == SystemReason.LEASE_EXPIRED:
        REAPED.labels(s.stage_type).inc()
    elif s.reason == SystemReason.TIMED_OUT:
        TIMEOUTS.labels(s.stage_type).inc()
