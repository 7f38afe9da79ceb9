"""Configuration from the environment (prefix JOBNIK_)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .domain.durations import parse_duration


def _seconds(value: Any) -> Any:
    """Durations come from the environment as seconds ("0.5"); ISO 8601 also works."""
    if isinstance(value, str):
        try:
            return timedelta(seconds=float(value))
        except ValueError:
            return value
    return value


Duration = Annotated[timedelta, BeforeValidator(_seconds)]


def _written(value: Any) -> Any:
    """A retention as people write it (7d, 12h, 1d12h, P7D); unset or empty: none."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        return parse_duration(value)
    return value


Retention = Annotated[timedelta | None, BeforeValidator(_written)]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="JOBNIK_", env_file=".env", extra="ignore", use_attribute_docstrings=True
    )

    database_url: str = "sqlite+aiosqlite:///./jobnik.db"
    """SQLAlchemy async URL: postgresql+asyncpg://... or sqlite+aiosqlite:///path"""
    host: str = "127.0.0.1"
    port: int = 8080
    log_level: str = "info"
    log_format: Literal["text", "json"] = "text"
    """text, or json: one JSON object per line (uvicorn's lines included) with the ids of the
    request's job, stage, task or stage type"""
    access_log: bool = True
    """One line per request (uvicorn's access log, at info); off spares a busy replica the line a
    request costs (a sixth to a quarter of the CPU of a read by key); /metrics still counts them"""
    # Connections kept open; overflow ones (as many again) are closed after each use,
    # so a busy replica should rarely need them.
    db_pool_size: int = Field(default=20, ge=1)
    auto_migrate: bool | None = None
    """Apply migrations when `serve` starts; default: on for SQLite, off otherwise"""

    # Limits on what one request may ask for (docs/operations.md, "Limits").
    max_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    """Largest request body, in bytes; a larger one is answered 413 unread"""
    max_body_values: int = Field(default=2_000_000, ge=1000)
    """Most JSON values (objects, arrays, strings, numbers, ...) in one body; bounds the memory a
    body takes once parsed"""
    max_tasks_per_call: int = Field(default=100_000, ge=1)
    """Most tasks one create may carry; add more to a stage with further calls of POST
    /v1/stages/{stageId}/tasks"""
    max_inline_tasks: int = Field(default=10_000, ge=1)
    """Most tasks a read with should_return_tasks=true may answer inline; larger stages are read a
    page at a time from GET /v1/stages/{stageId}/tasks"""

    auth: Literal["on", "off"] = "off"
    """on: every request but the probes needs a bearer token (jobnik-manager tokens create), and may
    do what its role allows"""
    auth_metrics: bool = False
    """With auth on, /metrics needs a token too (any role)"""
    metrics: bool = True
    """Count what happens and answer GET /metrics (Prometheus' text format)"""
    maintenance: bool = True
    """Run the lease reaper and due-retry loop here (safe on every replica)"""
    retention: Retention = None
    """Delete finished jobs (with their stages, tasks and events) this long after they ended, e.g.
    30d; unset: keep them forever"""
    maintenance_interval: Duration = timedelta(seconds=1)
    """Seconds between maintenance ticks"""
    workers_window: Duration = Field(default=timedelta(seconds=60), gt=timedelta(0))
    """Seconds a worker stays in the workers view (/v1/workers) after its last claim; an idle worker
    claims every 10 s (30 s with RabbitMQ)"""

    amqp_url: str | None = None
    """RabbitMQ URL (amqp://user:pw@host:5672/); set it to publish wake-ups and lifecycle events
    through the outbox"""
    relay_poll: Duration = timedelta(seconds=1)
    """How often the relay looks for rows written by other replicas"""

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def migrate_on_start(self) -> bool:
        return self.is_sqlite if self.auto_migrate is None else self.auto_migrate
