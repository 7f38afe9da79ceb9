"""OpenTelemetry in the manager: a request's span continues the caller's trace (its
`traceparent` header) and is named by route template, and the statements it runs through
SQLAlchemy are its children; with no OTEL_* settings there is no tracing at all."""

from __future__ import annotations

import httpx
from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from jobnik_manager.app import create_app
from jobnik_manager.db.engine import Database
from jobnik_manager.observe.tracing import provider_from_env
from jobnik_manager.settings import Settings

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"


async def test_a_request_continues_its_callers_trace_down_to_its_statements(
    sqlite_url: str,
) -> None:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    db = Database(sqlite_url)
    app = create_app(Settings(database_url=sqlite_url), database=db, tracer_provider=provider)
    body = {"name": "traced", "data": {}, "stages": [{"type": "t", "data": {}, "tasks": []}]}
    headers = {"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"}
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://m"
        ) as client:
            created = await client.post("/v1/jobs", json=body, headers=headers)
            assert created.status_code == 201
            read = await client.get(f"/v1/jobs/{created.json()['id']}", headers=headers)
            assert read.status_code == 200
    finally:
        await db.dispose()
        # The instrumentation also wraps engines made later: none of this process's
        # other tests should be traced.
        SQLAlchemyInstrumentor().uninstrument()
    spans = exported.get_finished_spans()
    servers = {s.name: s for s in spans if s.kind is SpanKind.SERVER}
    assert set(servers) == {"POST /v1/jobs", "GET /v1/jobs/{jobId}"}
    for server in servers.values():
        assert f"{server.context.trace_id:032x}" == TRACE_ID
        assert server.parent is not None and f"{server.parent.span_id:016x}" == CALLER_SPAN
        assert server.attributes is not None and "http.route" in server.attributes
    post = servers["POST /v1/jobs"]
    statements = [
        s for s in spans if s.parent is not None and s.parent.span_id == post.context.span_id
    ]
    assert any(s.name.startswith("INSERT") for s in statements), [s.name for s in spans]


def test_tracing_is_off_unless_the_environment_asks_for_it() -> None:
    assert provider_from_env({}) is None
    assert provider_from_env({"OTEL_TRACES_EXPORTER": "none"}) is None
    assert (
        provider_from_env({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}) is None
    )
    console = provider_from_env({"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "m-1"})
    assert console is not None
    assert console.resource.attributes["service.name"] == "m-1"
    otlp = provider_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert otlp is not None
    assert otlp.resource.attributes["service.name"] == "jobnik-manager"
    console.shutdown()
    otlp.shutdown()
