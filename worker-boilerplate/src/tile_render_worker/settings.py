"""The worker's configuration, from environment variables prefixed `WORKER_` (or a
`.env` file in the working directory)."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

import jobnik_sdk

# What this worker does unless its environment says otherwise: the stage type it claims
# and the handler it runs. Change HANDLER when you rename or replace the handler.
STAGE_TYPE = "tile-render"
HANDLER = "tile_render_worker.handler:render_tile"


class WorkerSettings(BaseSettings, jobnik_sdk.WorkerSettings):
    """Where the manager is, what to claim and run, and how to log; the Worker's own
    settings (concurrency, lease, heartbeats, polling, RabbitMQ, metrics, health file
    and the rest: WORKER_CONCURRENCY, WORKER_LEASE_SECONDS, ...) and their rules come
    from the SDK's `jobnik_sdk.WorkerSettings`, read here with the same prefix."""

    model_config = SettingsConfigDict(
        env_prefix="WORKER_", env_file=".env", extra="ignore", populate_by_name=True
    )

    manager_url: str = "http://127.0.0.1:8080"
    # The SDK's own variable is read too, so one secret serves every client.
    token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("WORKER_TOKEN", "JOBNIK_TOKEN")
    )
    """The manager's token for this worker (jobnik-manager tokens create --role worker);
    unset sends none. Never logged"""
    stage_type: str = STAGE_TYPE
    """Stage type to claim tasks of; several separated by commas"""
    handler: str = HANDLER
    """The handler to run, as 'module:function'"""
    request_timeout_seconds: float = Field(default=30.0, gt=0)
    log_level: str = "INFO"
    log_format: Literal["text", "json"] | None = None
    """'text' or 'json' (one JSON object per line, with the task's ids); unset reads
    JOBNIK_LOG_FORMAT, else text"""

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

    @property
    def stage_types(self) -> list[str]:
        return [part.strip() for part in self.stage_type.split(",") if part.strip()]

    @property
    def request_timeout(self) -> timedelta:
        return timedelta(seconds=self.request_timeout_seconds)
