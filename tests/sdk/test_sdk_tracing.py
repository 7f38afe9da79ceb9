"""Tracing: a producer's span context goes onto the jobs, stages and tasks it creates,
and a Worker runs each handler in a span that is a child of its task's stored context,
so the handler's run belongs to the producer's trace. On the manager (both backends)
and the fake; each test has a TracerProvider of its own, given to the Worker, so no
global provider is needed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, SpanKind, StatusCode

from jobnik_sdk import (
    JobStatus,
    NewStage,
    NewTask,
    NonRetryableError,
    TaskContext,
)

from ..support.api import unique
from ..support.workers import worker
from .conftest import Surface

DEADLINE = timedelta(seconds=20)


class Traces:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests")

    def spans(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.exporter.get_finished_spans() if span.name == name]


@pytest.fixture
def traces() -> Iterator[Traces]:
    made = Traces()
    yield made
    made.provider.shutdown()


def ids(traceparent: str | None) -> tuple[int, int]:
    """The trace id and span id a W3C traceparent names."""
    assert traceparent is not None
    _, trace_id, span_id, _ = traceparent.split("-")
    return int(trace_id, 16), int(span_id, 16)


def named(context: SpanContext) -> tuple[int, int]:
    return context.trace_id, context.span_id


async def test_a_handlers_span_is_a_child_of_its_tasks_stored_context(
    surface: Surface, traces: Traces
) -> None:
    kind = unique("traced")
    with traces.tracer.start_as_current_span("produce") as producer:
        job = await surface.create_job(
            unique("traced-job"),
            stages=[
                NewStage(
                    type=kind,
                    allowed_failures=1,
                    tasks=[NewTask(data={"fail": False}), NewTask(data={"fail": True})],
                )
            ],
        )
    produced = producer.get_span_context()
    assert ids(job.traceparent) == named(produced)

    current: dict[str, SpanContext] = {}

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        # The handler's own spans would be children of the task's span.
        current[str(ctx.task.id)] = trace.get_current_span().get_span_context()
        if data["fail"]:
            raise NonRetryableError("no such tile")

    # Started under a span of the test's: the handlers' spans must not hang under it.
    with traces.tracer.start_as_current_span("ambient"):
        async with worker(
            surface,
            kind,
            handler,
            concurrency=2,
            claim_wait=timedelta(0),
            tracer_provider=traces.provider,
        ):
            done = await surface.wait(
                job.id, timeout=DEADLINE, poll_interval=timedelta(milliseconds=20)
            )
    assert done.status is JobStatus.COMPLETED
    (stage,) = await surface.get_job_stages(job.id, with_tasks=True)
    assert stage.tasks is not None and len(stage.tasks) == 2
    spans = {
        str((span.attributes or {})["jobnik.task_id"]): span
        for span in traces.spans(f"jobnik.task {kind}")
    }
    assert len(spans) == 2
    for task in stage.tasks:
        span = spans[str(task.id)]
        stored_trace, stored_span = ids(task.traceparent)
        # In the producer's trace, as a child of the span the task's traceparent names.
        assert span.context is not None and span.parent is not None
        assert span.context.trace_id == produced.trace_id == stored_trace
        assert span.parent.span_id == stored_span
        assert span.parent.is_remote
        assert span.kind is SpanKind.CONSUMER
        assert named(current[str(task.id)]) == named(span.context)
        assert dict(span.attributes or {}) == {
            "jobnik.task_id": str(task.id),
            "jobnik.job_id": str(job.id),
            "jobnik.stage_id": str(stage.id),
            "jobnik.stage_type": kind,
            "jobnik.attempt": 1,
        }
        if task.data["fail"]:
            assert span.status.status_code is StatusCode.ERROR
            assert "NonRetryableError: no such tile" in (span.status.description or "")
            (event,) = span.events
            assert event.name == "exception"
            assert event.attributes is not None
            assert str(event.attributes["exception.type"]).endswith("NonRetryableError")
        else:
            assert span.status.status_code is StatusCode.UNSET
            assert not span.events


async def test_stages_and_tasks_added_under_a_span_carry_its_context(
    surface: Surface, traces: Traces
) -> None:
    kind = unique("traced-add")
    job = await surface.create_job(unique("traced-add-job"))
    # Outside any span: the manager starts a trace of its own for the job.
    assert job.traceparent is not None
    mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with traces.tracer.start_as_current_span("produce") as producer:
        stage = await surface.add_stage(job.id, kind, start_as_waiting=True)
        added, given = await surface.add_tasks(
            stage.id, [NewTask(), NewTask(traceparent=mine, tracestate="k=v")]
        )
    produced = named(producer.get_span_context())
    assert ids(job.traceparent)[0] != produced[0]
    assert ids(stage.traceparent) == produced
    assert ids(added.traceparent) == produced
    # A traceparent the caller gave is kept.
    assert (given.traceparent, given.tracestate) == (mine, "k=v")
    await surface.abort(job.id)


async def test_without_an_opentelemetry_sdk_nothing_is_injected_or_recorded(
    surface: Surface,
) -> None:
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        pytest.skip("a global tracer provider was set in this process")
    kind = unique("untraced")
    ran = asyncio.Event()
    recording: list[bool] = []

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        recording.append(trace.get_current_span().is_recording())
        ran.set()

    # No provider given nor set globally: the API's no-op (proxy) tracer.
    job = await surface.create_job(
        unique("untraced-job"), stages=[NewStage(type=kind, tasks=[NewTask()])]
    )
    assert job.traceparent is not None  # the manager's own
    async with worker(surface, kind, handler, claim_wait=timedelta(0)):
        await asyncio.wait_for(ran.wait(), DEADLINE.total_seconds())
    assert recording == [False]
