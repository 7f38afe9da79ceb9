"""The Worker's settings and their rules, in one place: the Worker checks its keyword
arguments by them, and `WorkerSettings` reads them from the environment for a worker
program (the template's settings extend it with what they add)."""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, ClassVar, Self, overload

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from ._backoff import Backoff
from ._claims import MAX_CLAIM
from ._consumer import MAX_CLAIM_WAIT
from ._reporter import MAX_REPORTS

# The most tasks a worker holds claimed ahead: two claims' worth, so that one full claim
# is on its way while the tasks of the last one start.
MAX_PREFETCH = 2 * MAX_CLAIM
DEFAULT_POLL_BACKOFF = Backoff(
    initial=timedelta(milliseconds=250), maximum=timedelta(seconds=5), jitter=0.3
)


def check_worker_options(
    *,
    concurrency: int,
    shutdown_grace: timedelta,
    lease: timedelta,
    heartbeat_interval: timedelta,
    claim_wait: timedelta,
    report_batch_size: int,
    report_linger: timedelta,
    prefetch: int,
    metrics_port: int | None,
    name: str | None,
) -> None:
    """Raise ValueError, naming the option, for a Worker option out of its range."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if shutdown_grace < timedelta(0):
        raise ValueError("shutdown_grace cannot be negative")
    if not timedelta(seconds=1) <= lease <= timedelta(days=7):
        raise ValueError("lease must be between 1 second and 7 days")
    if not timedelta(0) < heartbeat_interval < lease:
        raise ValueError("heartbeat_interval must be positive and shorter than lease")
    if not timedelta(0) <= claim_wait <= MAX_CLAIM_WAIT:
        raise ValueError("claim_wait must be between 0 and 60 seconds")
    if not 1 <= report_batch_size <= MAX_REPORTS:
        raise ValueError("report_batch_size must be between 1 and 100")
    if report_linger < timedelta(0):
        raise ValueError("report_linger cannot be negative")
    if not 0 <= prefetch <= MAX_PREFETCH:
        raise ValueError(f"prefetch must be between 0 and {MAX_PREFETCH}")
    if metrics_port is not None and not 1 <= metrics_port <= 65535:
        raise ValueError("metrics_port must be between 1 and 65535")
    if name is not None and not 1 <= len(name) <= 100:
        raise ValueError("a worker's name has 1 to 100 characters")


# The Worker options that `check_worker_options` holds to its rules.
_CHECKED = tuple(inspect.signature(check_worker_options).parameters)


def check_worker_options_in(options: Mapping[str, Any]) -> None:
    """`check_worker_options` on those of `options` (a Worker's keyword arguments by
    name, and whatever else) that it holds to its rules."""
    check_worker_options(**{name: options[name] for name in _CHECKED})


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


class _Duration:
    """A read-only `timedelta` view of a settings field in seconds, as the Worker takes
    it: `lease = _Duration("lease_seconds")`."""

    def __init__(self, field: str) -> None:
        self._field = field
        self.__doc__ = f"`{field}` as the Worker takes it."

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _Duration: ...
    @overload
    def __get__(self, obj: object, owner: type[Any]) -> timedelta: ...
    def __get__(self, obj: object | None, owner: type[Any]) -> _Duration | timedelta:
        if obj is None:
            return self
        return _seconds(getattr(obj, self._field))


class WorkerSettings(BaseModel):
    """A Worker's own settings as a program configures them: durations in seconds, as
    environment variables give them, and checked by the rules the Worker itself keeps.

    `WorkerSettings.from_env("WORKER_")` reads `WORKER_CONCURRENCY`,
    `WORKER_LEASE_SECONDS` and so on (each field's name in capitals after the prefix;
    `metrics_port` also from `JOBNIK_WORKER_METRICS_PORT`); `worker_options()` are the
    matching keyword arguments of `Worker`. A program's own settings class may extend
    this one with what it adds, e.g. as a pydantic-settings `BaseSettings` with its
    env prefix, and so re-declare none of the Worker's.
    """

    model_config = ConfigDict(populate_by_name=True, use_attribute_docstrings=True)

    concurrency: int = 1
    """Tasks run at the same time"""
    name: str | None = None
    """Names the worker on its tasks and events; default <hostname>-<pid>"""
    lease_seconds: float = 30.0
    """How long a claim holds without a heartbeat; a worker that dies unannounced has its tasks
    offered again this long after its last heartbeat"""
    heartbeat_seconds: float = 10.0
    """How often a running task's lease is renewed; less than the lease"""
    shutdown_grace_seconds: float = 30.0
    """On SIGTERM, how long running tasks may take before they are cancelled"""
    claim_wait_seconds: float = 30.0
    """With nothing ready, how long the manager may hold a claim open and answer it as soon as a
    task is ready; 0 polls instead"""
    poll_initial_seconds: float = Field(default=DEFAULT_POLL_BACKOFF.initial.total_seconds(), gt=0)
    """First idle poll delay"""
    poll_max_seconds: float = Field(default=DEFAULT_POLL_BACKOFF.maximum.total_seconds(), gt=0)
    """Longest idle poll delay"""
    amqp_url: str | None = None
    """RabbitMQ URL; when set the worker is woken by task.ready messages instead of polling (it
    still polls every safety poll)"""
    safety_poll_seconds: float = Field(default=30.0, gt=0)
    """With RabbitMQ, how often an idle worker polls anyway"""
    # The SDK's own name for it is taken too, so one variable serves every worker.
    metrics_port: int | None = Field(
        default=None, validation_alias=AliasChoices("metrics_port", "JOBNIK_WORKER_METRICS_PORT")
    )
    """Serve Prometheus metrics on this port (/metrics); unset serves none"""
    health_file: str | None = Field(default=None, min_length=1)
    """Keep this file fresh while the worker runs, for a health check
    (python -m jobnik_sdk.health FILE)"""
    prefetch: int = MAX_PREFETCH
    """The most tasks held claimed ahead of free slots"""
    report_batch_size: int = MAX_REPORTS
    """Reports sent in one call"""
    report_linger_seconds: float = 0.005
    """How long a report may wait for others to join its batch"""
    report_timeout_seconds: float = Field(default=300.0, ge=0)
    """How long a report that cannot be sent is sent again"""

    @model_validator(mode="after")
    def _by_the_workers_rules(self) -> Self:
        check_worker_options_in(self.worker_options())
        return self

    @classmethod
    def from_env(
        cls, prefix: str = "JOBNIK_WORKER_", environ: Mapping[str, str] | None = None
    ) -> Self:
        """The settings from environment variables (`environ`, by default the process's):
        each field from `<prefix><FIELD NAME>`, else from an upper-case alias of it;
        unset ones keep their defaults. Raises pydantic's ValidationError (a
        ValueError) naming what is out of range."""
        env = os.environ if environ is None else environ
        values: dict[str, str] = {}
        for field_name, field in cls.model_fields.items():
            names = [f"{prefix}{field_name}".upper()]
            alias = field.validation_alias
            if isinstance(alias, AliasChoices):
                names += [c for c in alias.choices if isinstance(c, str) and c.isupper()]
            found = next((env[n] for n in names if n in env), None)
            if found is not None:
                values[field_name] = found
        return cls.model_validate(values)

    lease: ClassVar[_Duration] = _Duration("lease_seconds")
    heartbeat_interval: ClassVar[_Duration] = _Duration("heartbeat_seconds")
    shutdown_grace: ClassVar[_Duration] = _Duration("shutdown_grace_seconds")
    claim_wait: ClassVar[_Duration] = _Duration("claim_wait_seconds")
    safety_poll: ClassVar[_Duration] = _Duration("safety_poll_seconds")

    @property
    def poll_backoff(self) -> Backoff:
        """The idle polls' backoff, from `poll_initial_seconds` to `poll_max_seconds`
        (no less than the first)."""
        initial = _seconds(self.poll_initial_seconds)
        return Backoff(
            initial=initial,
            maximum=max(initial, _seconds(self.poll_max_seconds)),
            multiplier=DEFAULT_POLL_BACKOFF.multiplier,
            jitter=DEFAULT_POLL_BACKOFF.jitter,
        )

    def worker_options(self) -> dict[str, Any]:
        """These settings as keyword arguments of `Worker`."""
        return {
            "concurrency": self.concurrency,
            "name": self.name,
            "lease": self.lease,
            "heartbeat_interval": self.heartbeat_interval,
            "shutdown_grace": self.shutdown_grace,
            "claim_wait": self.claim_wait,
            "poll_backoff": self.poll_backoff,
            "amqp_url": self.amqp_url or None,
            "safety_poll": self.safety_poll,
            "metrics_port": self.metrics_port,
            "health_file": self.health_file,
            "prefetch": self.prefetch,
            "report_batch_size": self.report_batch_size,
            "report_linger": _seconds(self.report_linger_seconds),
            "report_timeout": _seconds(self.report_timeout_seconds),
        }
