"""Assembling the Worker from the settings."""

from __future__ import annotations

import importlib
from typing import Any

from jobnik_sdk import ConsumerClient, Handler, JobnikClient, Worker

from .settings import WorkerSettings


def load_handler(reference: str) -> Handler[Any]:
    """The handler named by 'package.module:function'."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"handler must look like 'module:function', got {reference!r}")
    handler: Handler[Any] = getattr(importlib.import_module(module_name), attribute)
    return handler


def build_client(settings: WorkerSettings) -> JobnikClient:
    """A client of the configured manager."""
    return JobnikClient(settings.manager_url, timeout=settings.request_timeout)


def build_worker(settings: WorkerSettings, client: ConsumerClient) -> Worker[Any]:
    """A Worker on `client` for the configured stage types and handler."""
    return Worker(
        client,
        stage_types=settings.stage_types,
        handler=load_handler(settings.handler),
        concurrency=settings.concurrency,
        poll_backoff=settings.poll_backoff,
        claim_wait=settings.claim_wait,
        shutdown_grace=settings.shutdown_grace,
        lease=settings.lease,
        heartbeat_interval=settings.heartbeat_interval,
        name=settings.name,
        amqp_url=settings.amqp_url or None,
        safety_poll=settings.safety_poll,
    )
