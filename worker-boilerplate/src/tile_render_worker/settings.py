"""The worker's configuration, from environment variables prefixed `WORKER_` (or a
`.env` file in the working directory)."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal, Self

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from jobnik_sdk import Backoff

# What this worker does unless its environment says otherwise: the stage type it claims
# and the handler it runs. Change HANDLER when you rename or replace the handler.
STAGE_TYPE = "tile-render"
HANDLER = "tile_render_worker.handler:render_tile"


class WorkerSettings(BaseSettings):
    """Where the manager is, what to claim, and how the worker paces itself."""

    model_config = SettingsConfigDict(
        env_prefix="WORKER_", env_file=".env", extra="ignore", populate_by_name=True
    )

    manager_url: str = "http://127.0.0.1:8080"
    token: SecretStr | None = Field(
        default=None,
        # The SDK's own variable is read too, so one secret serves every client.
        validation_alias=AliasChoices("WORKER_TOKEN", "JOBNIK_TOKEN"),
        description="The manager's token for this worker (jobnik-manager tokens create "
        "--role worker); unset sends none. Never logged",
    )
    stage_type: str = Field(
        default=STAGE_TYPE,
        description="Stage type to claim tasks of; several separated by commas",
    )
    handler: str = Field(
        default=HANDLER,
        description="The handler to run, as 'module:function'",
    )
    concurrency: int = Field(default=1, ge=1, description="Tasks run at the same time")
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="Names the worker on its tasks and events; default <hostname>-<pid>",
    )
    lease_seconds: float = Field(
        default=30.0,
        ge=1,
        le=7 * 24 * 3600,
        description="How long a claim holds without a heartbeat; a worker that dies "
        "unannounced has its tasks offered again this long after its last heartbeat",
    )
    heartbeat_seconds: float = Field(
        default=10.0,
        gt=0,
        description="How often a running task's lease is renewed; less than the lease",
    )
    shutdown_grace_seconds: float = Field(
        default=30.0,
        ge=0,
        description="On SIGTERM, how long running tasks may take before they are cancelled",
    )
    claim_wait_seconds: float = Field(
        default=10.0,
        ge=0,
        le=60,
        description="With nothing ready, how long the manager may hold a claim open and "
        "answer it as soon as a task is ready; 0 polls instead",
    )
    poll_initial_seconds: float = Field(default=0.25, gt=0, description="First idle poll delay")
    poll_max_seconds: float = Field(default=5.0, gt=0, description="Longest idle poll delay")
    request_timeout_seconds: float = Field(default=30.0, gt=0)
    amqp_url: str | None = Field(
        default=None,
        description="RabbitMQ URL; when set the worker is woken by task.ready messages "
        "instead of polling (it still polls every WORKER_SAFETY_POLL_SECONDS)",
    )
    safety_poll_seconds: float = Field(
        default=30.0, gt=0, description="With RabbitMQ, how often an idle worker polls anyway"
    )
    log_level: str = "INFO"
    log_format: Literal["text", "json"] | None = Field(
        default=None,
        description="'text' or 'json' (one JSON object per line, with the task's ids); "
        "unset reads JOBNIK_LOG_FORMAT, else text",
    )
    metrics_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        # The SDK's own name for it is taken too, so one variable serves every worker.
        validation_alias=AliasChoices(
            "metrics_port", "WORKER_METRICS_PORT", "JOBNIK_WORKER_METRICS_PORT"
        ),
        description="Serve Prometheus metrics on this port (/metrics); unset serves none",
    )
    health_file: str | None = Field(
        default=None,
        min_length=1,
        description="Keep this file fresh while the worker runs, for a health check "
        "(python -m jobnik_sdk.health FILE); the image sets /tmp/worker-health",
    )

    @field_validator("stage_type")
    @classmethod
    def _some_stage_type(cls, value: str) -> str:
        if not [part for part in value.split(",") if part.strip()]:
            raise ValueError("name at least one stage type")
        return value

    @field_validator("token", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        # An empty WORKER_TOKEN leaves the choice to JOBNIK_TOKEN, as if unset.
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        return value.strip() or None if isinstance(value, str) else value

    @field_validator("log_format", mode="before")
    @classmethod
    def _lower_case(cls, value: object) -> object:
        return value.strip().lower() or None if isinstance(value, str) else value

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> Self:
        if self.heartbeat_seconds >= self.lease_seconds:
            raise ValueError("WORKER_HEARTBEAT_SECONDS must be less than WORKER_LEASE_SECONDS")
        return self

    @property
    def stage_types(self) -> list[str]:
        return [part.strip() for part in self.stage_type.split(",") if part.strip()]

    @property
    def shutdown_grace(self) -> timedelta:
        return timedelta(seconds=self.shutdown_grace_seconds)

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=self.lease_seconds)

    @property
    def heartbeat_interval(self) -> timedelta:
        return timedelta(seconds=self.heartbeat_seconds)

    @property
    def safety_poll(self) -> timedelta:
        return timedelta(seconds=self.safety_poll_seconds)

    @property
    def claim_wait(self) -> timedelta:
        return timedelta(seconds=self.claim_wait_seconds)

    @property
    def request_timeout(self) -> timedelta:
        return timedelta(seconds=self.request_timeout_seconds)

    @property
    def poll_backoff(self) -> Backoff:
        initial = timedelta(seconds=self.poll_initial_seconds)
        return Backoff(
            initial=initial, maximum=max(initial, timedelta(seconds=self.poll_max_seconds))
        )
