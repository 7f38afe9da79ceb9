"""A Worker's handler spans when nothing records them: the block has what the API's
no-op tracer would make current, without the tracer's machinery (a worker pays it per
task). Held here to what `NoOpTracer.start_as_current_span` does with the same
parent, so the shortcut cannot drift from it."""

from __future__ import annotations

import uuid

import pytest
from opentelemetry import context, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from jobnik_sdk import Task
from jobnik_sdk._tracing import HandlerSpans, _w3c

from ..support.sdk_tasks import a_claimed_task

pytestmark = pytest.mark.unit

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def a_task(traceparent: str | None = None, tracestate: str | None = None) -> Task:
    return a_claimed_task(traceparent=traceparent, tracestate=tracestate)


def as_the_noop_tracer_makes_it(task: Task) -> trace.Span:
    """The current span inside the API's no-op tracer's span for the task."""
    carrier = {k: v for k in ("traceparent", "tracestate") if (v := getattr(task, k))}
    parent = _w3c().extract(carrier, context=context.Context())
    with trace.NoOpTracer().start_as_current_span("x", context=parent):
        return trace.get_current_span()


def inside(spans: HandlerSpans, task: Task) -> tuple[trace.Span, trace.Span]:
    """The span the block returns and the span current inside it."""
    with spans.span(task, job_id=uuid.uuid4(), stage_type="t") as span:
        return span, trace.get_current_span()


@pytest.mark.parametrize(
    ("traceparent", "tracestate"),
    [
        (PARENT, None),
        (PARENT, "vendor=abc,other=1"),
        ("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", None),  # not sampled
        ("not a traceparent", None),
        (None, "vendor=abc"),
        (None, None),
    ],
)
def test_without_a_recording_tracer_the_handler_sees_what_the_noop_tracer_gives(
    traceparent: str | None, tracestate: str | None
) -> None:
    spans = HandlerSpans(trace.NoOpTracerProvider())
    assert not spans.records
    task = a_task(traceparent, tracestate)
    expected = as_the_noop_tracer_makes_it(task)

    returned, current = inside(spans, task)

    assert returned is current
    assert isinstance(current, NonRecordingSpan)
    assert not current.is_recording()
    assert current.get_span_context() == expected.get_span_context()
    assert current.get_span_context().trace_state == expected.get_span_context().trace_state


def test_the_stored_context_is_what_the_handler_propagates() -> None:
    spans = HandlerSpans(trace.NoOpTracerProvider())
    with spans.span(a_task(PARENT, "vendor=abc"), job_id=uuid.uuid4(), stage_type="t"):
        carrier: dict[str, str] = {}
        _w3c().inject(carrier)
    assert carrier == {"traceparent": PARENT, "tracestate": "vendor=abc"}


def test_the_workers_own_span_is_not_the_handlers_and_is_back_after_the_block() -> None:
    spans = HandlerSpans(trace.NoOpTracerProvider())
    workers = NonRecordingSpan(
        SpanContext(
            0x1234, 0x5678, is_remote=False, trace_flags=TraceFlags(1), trace_state=TraceState()
        )
    )
    with trace.use_span(workers):
        _, current = inside(spans, a_task())
        assert current is trace.INVALID_SPAN
        assert trace.get_current_span() is workers


def test_an_exception_leaves_the_context_as_it_was() -> None:
    spans = HandlerSpans(trace.NoOpTracerProvider())
    before = context.get_current()
    with pytest.raises(ValueError), spans.span(a_task(PARENT), job_id=uuid.uuid4(), stage_type="t"):
        raise ValueError("boom")
    assert context.get_current() == before


def test_a_provider_that_records_gets_a_real_span_named_for_the_stage_type() -> None:
    provider = TracerProvider()
    spans = HandlerSpans(provider)
    assert spans.records
    returned, current = inside(spans, a_task(PARENT))
    assert returned is current and current.is_recording() is False  # ended with the block
    assert current.get_span_context().trace_id == int(PARENT.split("-")[1], 16)
    assert current.get_span_context().span_id != int(PARENT.split("-")[2], 16)
    provider.shutdown()
