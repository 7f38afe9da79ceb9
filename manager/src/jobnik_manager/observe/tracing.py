"""OpenTelemetry traces of requests and database calls, off unless the standard
variables ask for them: OTEL_TRACES_EXPORTER (otlp, console) or an OTLP endpoint
(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_SDK_DISABLED=true
turns them off whatever else is set. OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name
the service (jobnik-manager unless they do).

A request's span continues the trace its `traceparent` header names. Statements that go
through SQLAlchemy are spans of their own, and a traced engine sends every statement of a
transaction through it (db/session_driver.py); the few hot-path statements sent on
asyncpg directly (claims, completions) are not spans.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any

from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from ..db.session_driver import through_sqlalchemy
from .http import RouteTemplates

_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def provider_from_env(env: Mapping[str, str] = os.environ) -> TracerProvider | None:
    """A tracer provider exporting where the environment says, or None for no traces."""
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    exporter_name = env.get("OTEL_TRACES_EXPORTER", "").lower()
    if exporter_name == "none" or not (exporter_name or any(env.get(k) for k in _ENDPOINTS)):
        return None
    exporter: SpanExporter
    if exporter_name == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    resource = Resource.create({"service.name": "jobnik-manager"}).merge(
        OTELResourceDetector().detect()
    )
    if env.get("OTEL_SERVICE_NAME"):
        resource = resource.merge(Resource({"service.name": env["OTEL_SERVICE_NAME"]}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def span_details(routes: RouteTemplates) -> Any:
    """Spans named by method and route template (`PUT /v1/tasks/{taskId}/status`), not by
    the path with its ids, which would make every name unique."""

    def details(scope: MutableMapping[str, Any]) -> tuple[str, dict[str, Any]]:
        method = scope.get("method", "HTTP")
        route, _ = routes.resolve(scope) if "path" in scope else ("other", {})
        return f"{method} {route}", {"http.route": route}

    return details


def trace_database(engine: Any, provider: TracerProvider) -> None:
    """Spans for the statements of this engine (an AsyncEngine's sync engine)."""
    from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor

    instrumentor = SQLAlchemyInstrumentor()
    if not instrumentor.is_instrumented_by_opentelemetry:
        # Its declared range stops short of SQLAlchemy 2.1, whose engine events it uses
        # unchanged (the tracing tests show the statements' spans).
        instrumentor.instrument(engine=engine, tracer_provider=provider, skip_dep_check=True)
    through_sqlalchemy(engine)
