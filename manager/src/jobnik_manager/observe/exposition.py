"""The text a scrape of /metrics answers: this server's counters and histograms (all
its processes' with PROMETHEUS_MULTIPROC_DIR), what the database holds, and of the
process that answers, its connection pool and build."""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable, Iterator

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from .. import __version__
from ..db.engine import Database
from .state import State, read_state

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _counted() -> CollectorRegistry:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return registry
    return REGISTRY


async def scrape(db: Database) -> bytes:
    state = await read_state(db)
    now = CollectorRegistry(auto_describe=False)
    now.register(_Now(state, db))
    return generate_latest(_counted()) + generate_latest(now)


def _by(name: str, doc: str, label: str, values: dict[str, int] | dict[str, float]) -> Metric:
    family = GaugeMetricFamily(name, doc, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family


_READY = "Tasks waiting to run (PENDING, RETRIED) in stages that may run, of jobs not paused"
_OLDEST = "Age of the oldest claimable task (since its creation)"
_EXPIRING = "Running tasks whose lease runs out within 10 s (or has, unreaped)"


class _Now(Collector):
    def __init__(self, state: State, db: Database) -> None:
        self.state, self.db = state, db

    def collect(self) -> Iterator[Metric]:
        s = self.state
        by_type = (
            ("jobnik_tasks_ready", _READY, s.ready),
            ("jobnik_tasks_oldest_ready_age_seconds", _OLDEST, s.oldest_ready_age),
            ("jobnik_tasks_in_flight", "Tasks claimed and running", s.in_flight),
            ("jobnik_leases_expiring", _EXPIRING, s.expiring),
        )
        for name, doc, values in by_type:
            yield _by(name, doc, "stage_type", values)
        paused = {t: 1 for t in s.paused}
        yield _by("jobnik_stage_type_paused", "1 for a stage type paused", "stage_type", paused)
        yield _by("jobnik_jobs", "Jobs by status", "status", s.jobs)
        yield _by("jobnik_stages", "Stages by status", "status", s.stages)
        yield GaugeMetricFamily(
            "jobnik_outbox_backlog", "Messages committed, not yet published", s.outbox_backlog
        )
        yield GaugeMetricFamily(
            "jobnik_outbox_oldest_age_seconds",
            "Age of the oldest message not yet published",
            s.outbox_oldest_age,
        )
        yield from _pool(self.db)
        info = GaugeMetricFamily(
            "jobnik_build_info", "The manager's version", labels=["version", "python"]
        )
        info.add_metric([__version__, platform.python_version()], 1)
        yield info


def _pool(db: Database) -> Iterable[Metric]:
    """The answering process's connection pool (SQLite's engine keeps none to count)."""
    pool = db.engine.pool
    size, out = getattr(pool, "size", None), getattr(pool, "checkedout", None)
    if size is None or out is None:
        return
    used = GaugeMetricFamily(
        "jobnik_db_pool_connections", "Database connections of this process", labels=["state"]
    )
    used.add_metric(["in_use"], out())
    used.add_metric(["idle"], pool.checkedin() if hasattr(pool, "checkedin") else 0)
    yield used
    yield GaugeMetricFamily("jobnik_db_pool_size", "Connections the pool keeps", size())
