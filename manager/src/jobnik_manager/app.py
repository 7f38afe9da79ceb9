"""The FastAPI application."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi_offline import FastAPIOffline
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.trace import TracerProvider

from . import __version__
from .api.auth import Authenticator
from .api.deps import documented_method, known_query_only
from .api.edge import Limits, RequestEdge
from .api.errors import install_error_handlers, route_methods
from .api.fast_lane import install_fast_lane
from .api.guard import InputGuard
from .api.ojs_headers import OjsHeaders
from .api.openapi import install_openapi
from .api.routes import (
    dead_letters,
    health,
    jobs,
    ojs,
    ojs_cron,
    ojs_queues,
    ojs_workers,
    ojs_workflows,
    outputs,
    schedules,
    stage_types,
    stages,
    tasks,
    tokens,
    ui,
    workers,
)
from .db.engine import Database, TransactionHook
from .dispatch.outbox import Outbox
from .dispatch.relay import Relay
from .dispatch.wakeups import ReadyWaiters, listen
from .maintenance.loop import run_maintenance
from .observe.http import RequestMetrics, RouteTemplates
from .observe.metrics import MetricsHook
from .observe.tracing import provider_from_env, span_details, trace_database
from .services.workers import Sightings
from .settings import Settings

# The API's route modules, beside the probes (health) and the dashboard (ui).
_API = (jobs, outputs, stages, stage_types, tasks, tokens, workers, dead_letters, schedules)
_OJS = (ojs, ojs_queues, ojs_workers, ojs_cron, ojs_workflows)  # the Open Job Spec's binding


def create_app(
    settings: Settings | None = None,
    *,
    database: Database | None = None,
    tracer_provider: TracerProvider | None = None,
) -> FastAPI:
    """The manager's app. Traces go to `tracer_provider`, or where the OTEL_* variables
    say (observe.tracing), or nowhere."""
    settings = settings or Settings()
    tracer_provider = tracer_provider or provider_from_env()
    waiters = ReadyWaiters()
    # With a broker, changes write outbox rows for the relay to publish.
    outbox = Outbox() if settings.amqp_url else None
    given = database or Database(settings.database_url, pool_size=settings.db_pool_size)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db: Database = app.state.database
        loops = []
        if settings.maintenance:
            loops.append(
                asyncio.create_task(
                    run_maintenance(
                        db, settings.maintenance_interval, settings.retention, schedules.job_of
                    )
                )
            )
        if not db.is_sqlite:
            loops.append(asyncio.create_task(listen(db.url, waiters, db.backends)))
        if settings.amqp_url:
            relay = Relay(db, settings.amqp_url, outbox=outbox, poll=settings.relay_poll)
            loops.append(asyncio.create_task(relay.run()))
        try:
            yield
        finally:
            for loop in loops:
                loop.cancel()
            for loop in loops:
                with contextlib.suppress(asyncio.CancelledError):
                    await loop
            if database is None:  # an injected database belongs to the caller
                await db.dispose()

    # /docs and /redoc with Swagger UI's and ReDoc's files from the package: no CDN.
    app = FastAPIOffline(
        title="Jobnik manager",
        version=__version__,
        description="Jobs made of ordered stages of parallel tasks; Jobnik v1 compatible.",
        lifespan=lifespan,
        **_WITHOUT_NATIVE_TELEMETRY,
    )
    app.state.waiters = waiters
    app.state.outbox = outbox
    app.state.settings = settings
    use_database(app, given)
    install_error_handlers(app)
    install_openapi(app)
    # What a 405's Allow and the documented-method check read (api/errors.py).
    routers = [m.router for m in (health, *_API, *_OJS)]
    app.state.route_methods = route_methods(routers)
    app.include_router(health.router)
    app.include_router(ui.router)  # the dashboard at /ui
    app.mount(ui.ASSETS_PATH, ui.assets(), name="ui-assets")
    for module in _API:
        app.include_router(
            module.router,
            dependencies=[Depends(documented_method), Depends(known_query_only)],
        )
    # The Open Job Spec's binding: its bodies and queries are read by its own routes,
    # which word their refusals as the spec does.
    for module in _OJS:
        app.include_router(module.router, dependencies=[Depends(documented_method)])
    # The request edge (added last: outermost) reads and parses a body once, and the
    # one RouteTemplates resolves a path once, for whichever reader asks first: the
    # order of the middlewares below decides only which refusal a request meets first.
    routes = app.state.routes = RouteTemplates(app.state.route_methods)
    limits = Limits(settings.max_body_bytes, settings.max_body_values)
    # The workers' per-task calls (innermost: once every check below has passed) skip
    # FastAPI's middlewares, router, dependency solving and validation.
    install_fast_lane(app, routes)
    # What no route may take is refused before any sees it.
    app.add_middleware(InputGuard, limits=limits)
    if settings.auth == "on":  # outside the guard: who asks is known first
        app.add_middleware(
            Authenticator,
            api=app,
            routes=routes,
            open_metrics=not settings.auth_metrics,
            max_body_bytes=settings.max_body_bytes,
        )
    if tracer_provider is not None:
        trace_database(given.engine.sync_engine, tracer_provider)
        app.add_middleware(
            OpenTelemetryMiddleware,
            tracer_provider=tracer_provider,
            default_span_details=span_details(routes),
            exclude_spans=["receive", "send"],
        )
    if settings.metrics:  # it counts what the guard refuses too
        app.add_middleware(RequestMetrics, routes=routes, log_ids=settings.log_format == "json")
    app.add_middleware(RequestEdge, limits=limits)
    app.add_middleware(OjsHeaders)  # outermost: on every /ojs/ answer, refusals included
    return app


# FastAPI's own OpenTelemetry (in its newer releases) would trace each request a second
# time beside the manager's middleware, with the process's global providers, and asks
# them on every request whether to: 2% of a read's CPU for nothing.
_WITHOUT_NATIVE_TELEMETRY: dict[str, Any] = (
    {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
    if "telemetry" in inspect.signature(FastAPI.__init__).parameters
    else {}
)


def use_database(app: FastAPI, database: Database) -> None:
    """Serve `app` from `database`, with the hooks that wake its waiting claims and fill
    its outbox. An app prepares each route on its first request (some milliseconds a
    route), so one that serves several databases in turn prepares them once."""
    hooks: list[TransactionHook] = [app.state.waiters]
    if app.state.outbox:
        hooks.append(app.state.outbox)
    if app.state.settings.metrics:
        hooks.append(MetricsHook())
    app.state.database = database.with_hooks(*hooks)
    app.state.sightings = Sightings()  # what it recorded of workers, for that database
