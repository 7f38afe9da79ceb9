"""Assembling the Worker from the settings."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from jobnik_sdk import ConsumerClient, Handler, JobnikClient, Worker

from .settings import WorkerSettings


class HandlerNotFoundError(ValueError):
    """WORKER_HANDLER names no handler: a malformed reference, a module that is not
    there, or a module without that function."""


def load_handler(reference: str) -> Handler[Any]:
    """The handler named by 'package.module:function'.

    Raises HandlerNotFoundError, naming the setting and what was found instead, when
    the reference is malformed or leads nowhere. An error raised while importing a
    module that does exist propagates as it is.
    """
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise HandlerNotFoundError(
            f"WORKER_HANDLER must look like 'module:function', got {reference!r}"
        )
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only the module named is "not found"; a missing import inside it is its own error.
        if exc.name is None or not f"{module_name}.".startswith(f"{exc.name}."):
            raise
        raise HandlerNotFoundError(
            f"WORKER_HANDLER={reference!r}: there is no module {module_name!r}"
        ) from None
    handler = getattr(module, attribute, None)
    if handler is None or not callable(handler):
        found = sorted(
            name
            for name, value in vars(module).items()
            if inspect.iscoroutinefunction(value) and value.__module__ == module.__name__
        )
        hint = f"; its async functions: {', '.join(found)}" if found else ""
        raise HandlerNotFoundError(
            f"WORKER_HANDLER={reference!r}: module {module_name!r} has no function "
            f"{attribute!r}{hint}. Set WORKER_HANDLER to your handler as 'module:function' "
            "(its default is HANDLER in settings.py)"
        )
    loaded: Handler[Any] = handler
    return loaded


def build_client(settings: WorkerSettings) -> JobnikClient:
    """A client of the configured manager, with the worker's token when one is set
    (WORKER_TOKEN, else JOBNIK_TOKEN)."""
    token = settings.token.get_secret_value() if settings.token is not None else None
    return JobnikClient(settings.manager_url, timeout=settings.request_timeout, token=token)


def build_worker(settings: WorkerSettings, client: ConsumerClient) -> Worker[Any]:
    """A Worker on `client` for the configured stage types and handler."""
    return Worker(
        client,
        stage_types=settings.stage_types,
        handler=load_handler(settings.handler),
        **settings.worker_options(),
    )
