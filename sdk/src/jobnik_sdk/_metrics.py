"""A Worker's Prometheus metrics (the `metrics` extra): made once per process in the
default registry, and shared by every Worker in it; served on a port when asked.

prometheus_client is imported only when a Worker turns metrics on, so the SDK works
without it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from prometheus_client import Counter, Gauge, Histogram

# How a handler's run ended, as `jobnik_worker_handler_seconds` labels it.
HandlerOutcome = Literal["completed", "failed", "retried", "retry_later", "cancelled", "lost"]

# Tasks take from milliseconds to an hour; heartbeats should take milliseconds.
HANDLER_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
HEARTBEAT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# The label of a task whose stage type is not known (claimed without its stage, by a
# worker of several types).
UNKNOWN_STAGE_TYPE = "unknown"

_MISSING = (
    "Worker metrics need prometheus-client: install the SDK's `metrics` extra "
    "(pip install 'jobnik-sdk[metrics]')"
)


@dataclass(frozen=True, slots=True)
class WorkerMetrics:
    """The metrics every Worker of the process shares."""

    tasks_in_flight: Gauge
    handler_seconds: Histogram
    failures: Counter
    claims: Counter
    empty_polls: Counter
    heartbeat_seconds: Histogram
    leases_lost: Counter


_lock = threading.Lock()
_metrics: WorkerMetrics | None = None
# Metrics servers by port, with how many Workers use each.
_servers: dict[int, tuple[Callable[[], None], int]] = {}


def worker_metrics() -> WorkerMetrics:
    """The process's Worker metrics, registered in the default registry on first use."""
    global _metrics
    with _lock:
        if _metrics is None:
            try:
                from prometheus_client import Counter, Gauge, Histogram
            except ImportError as exc:
                raise ImportError(_MISSING) from exc
            _metrics = WorkerMetrics(
                tasks_in_flight=Gauge(
                    "jobnik_worker_tasks_in_flight",
                    "Tasks whose handler is running.",
                    ["stage_type"],
                ),
                handler_seconds=Histogram(
                    "jobnik_worker_handler_seconds",
                    "How long handlers ran, by how they ended.",
                    ["stage_type", "outcome"],
                    buckets=HANDLER_BUCKETS,
                ),
                failures=Counter(
                    "jobnik_worker_failures",
                    "Failed attempts, by the exception's class name.",
                    ["stage_type", "error_type"],
                ),
                claims=Counter("jobnik_worker_claims", "Tasks claimed.", ["stage_type"]),
                empty_polls=Counter(
                    "jobnik_worker_empty_polls",
                    "Claims that brought no task; the label joins the stage types with ','.",
                    ["stage_type"],
                ),
                heartbeat_seconds=Histogram(
                    "jobnik_worker_heartbeat_seconds",
                    "Round trip of a heartbeat call.",
                    buckets=HEARTBEAT_BUCKETS,
                ),
                leases_lost=Counter(
                    "jobnik_worker_leases_lost",
                    "Tasks dropped because their lease was lost or they were gone.",
                    ["stage_type"],
                ),
            )
        return _metrics


def serve(port: int, addr: str = "0.0.0.0") -> Callable[[], None]:
    """Serve the default registry on `port` (once per port, however many Workers ask);
    returns what stops serving it once the last of them is done."""
    try:
        from prometheus_client import start_http_server
    except ImportError as exc:
        raise ImportError(_MISSING) from exc
    with _lock:
        if port in _servers:
            stop, users = _servers[port]
            _servers[port] = (stop, users + 1)
        else:
            server, thread = start_http_server(port, addr)

            def stop() -> None:
                server.shutdown()
                server.server_close()
                thread.join()

            _servers[port] = (stop, 1)

    def release() -> None:
        with _lock:
            stop, users = _servers[port]
            if users > 1:
                _servers[port] = (stop, users - 1)
                return
            del _servers[port]
        stop()

    return release


class Meter:
    """What one Worker records; does nothing when its metrics are off (None)."""

    def __init__(self, metrics: WorkerMetrics | None, stage_types: Iterable[str]) -> None:
        self._metrics = metrics
        types = list(stage_types)
        self._all_types = ",".join(types)
        # A worker of one type knows the type of each task it claims.
        self._fallback = types[0] if len(types) == 1 else UNKNOWN_STAGE_TYPE

    @property
    def enabled(self) -> bool:
        """Whether metrics are on."""
        return self._metrics is not None

    def stage_type(self, known: str | None) -> str:
        """The label of a task's stage type, as far as it is known."""
        return known or self._fallback

    def claimed(self, stage_type: str) -> None:
        if self._metrics is not None:
            self._metrics.claims.labels(stage_type).inc()

    def empty_poll(self) -> None:
        if self._metrics is not None:
            self._metrics.empty_polls.labels(self._all_types).inc()

    def started(self, stage_type: str) -> None:
        if self._metrics is not None:
            self._metrics.tasks_in_flight.labels(stage_type).inc()

    def ended(
        self,
        started_as: str,
        stage_type: str,
        outcome: HandlerOutcome,
        seconds: float,
        error_type: str | None = None,
    ) -> None:
        """A handler that `started` (under `started_as`) ended as `outcome`; a failed
        attempt names its `error_type`."""
        if self._metrics is None:
            return
        self._metrics.tasks_in_flight.labels(started_as).dec()
        self._metrics.handler_seconds.labels(stage_type, outcome).observe(seconds)
        if error_type is not None:
            self._metrics.failures.labels(stage_type, error_type).inc()

    def lease_lost(self, stage_type: str) -> None:
        if self._metrics is not None:
            self._metrics.leases_lost.labels(stage_type).inc()

    def heartbeat(self, seconds: float) -> None:
        if self._metrics is not None:
            self._metrics.heartbeat_seconds.observe(seconds)
