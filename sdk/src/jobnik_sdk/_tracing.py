"""OpenTelemetry: the producer's trace context goes onto the jobs, stages and tasks it
creates (their W3C `traceparent`/`tracestate` fields), and a Worker runs each handler
in a span that is a child of its task's stored context.

Only the OpenTelemetry API is used: without an SDK configured (a TracerProvider), no
span is recorded and there is no context to inject, so all of this costs next to
nothing. opentelemetry is imported on first use, not with the SDK.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import cache
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from opentelemetry.propagators.textmap import TextMapPropagator
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from ._models import Task

TRACER_NAME = "jobnik_sdk"
_FIELDS = ("traceparent", "tracestate")


@cache
def _w3c() -> TextMapPropagator:
    # The API's fields are W3C trace context whatever propagator the process set
    # globally (B3, say), so they are written and read with the W3C one.
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator()


def trace_fields(traceparent: str | None, tracestate: str | None) -> dict[str, str]:
    """The trace fields of a create call: the caller's `traceparent` (and `tracestate`)
    if given, else those of the current OpenTelemetry context, if it has a span."""
    if traceparent is None:
        carrier: dict[str, str] = {}
        _w3c().inject(carrier)
        traceparent = carrier.get("traceparent")
        if tracestate is None:
            tracestate = carrier.get("tracestate") or None
    fields = {"traceparent": traceparent, "tracestate": tracestate}
    return {key: value for key, value in fields.items() if value is not None}


def tracer(provider: TracerProvider | None = None) -> Tracer:
    """The SDK's tracer from `provider`, or from the global provider (which may be set
    after this is called: the API's proxy tracer follows it)."""
    from opentelemetry import trace

    return trace.get_tracer(TRACER_NAME, __version__, tracer_provider=provider)


class HandlerSpans:
    """A Worker's handler spans, from `tracer_provider` or the global one (which may be
    set after the Worker is made: the API's proxy tracer follows it).

    Each run of a handler is in `span(...)`. While the tracer records nothing (the
    API's no-op tracer, or its proxy while no global provider is set), the block only
    has what the no-op tracer would give it, without building a span: a worker pays
    this for every task.
    """

    def __init__(self, provider: TracerProvider | None = None) -> None:
        from opentelemetry import context, trace

        self._tracer = tracer(provider)
        self._context = context
        self._trace = trace
        # The global provider is set once at most: until then the proxy tracer is a
        # no-op one, and get_tracer_provider answers this very object.
        self._unset = (
            trace.get_tracer_provider() if isinstance(self._tracer, trace.ProxyTracer) else None
        )
        self._records = not isinstance(self._tracer, trace.NoOpTracer) and self._unset is None

    @property
    def records(self) -> bool:
        """Whether spans are recorded now."""
        unset = self._unset
        if unset is not None and self._trace.get_tracer_provider() is not unset:
            self._records, self._unset = True, None
        return self._records

    def span(self, task: Task, *, job_id: Any, stage_type: str) -> AbstractContextManager[Span]:
        """The span of one run of `task`'s handler, current inside the block: see
        `task_span`."""
        if self.records:
            return task_span(self._tracer, task, job_id=job_id, stage_type=stage_type)
        return _Untraced(self, task)


class _Untraced:
    """What the no-op tracer's `start_as_current_span` makes current for a task: its
    stored context's span, not recording (or the invalid span when it has none), so
    what the handler propagates stays in the producer's trace. The stored context is
    read when first asked for: most handlers never do."""

    __slots__ = ("_spans", "_task", "_token")

    def __init__(self, spans: HandlerSpans, task: Task) -> None:
        self._spans = spans
        self._task = task

    def __enter__(self) -> Span:
        trace, context = self._spans._trace, self._spans._context
        task = self._task
        span: Span = trace.INVALID_SPAN
        if task.traceparent:
            span = _stored_span_type()(task.traceparent, task.tracestate)
        self._token = context.attach(trace.set_span_in_context(span))
        return span

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._spans._context.detach(self._token)


@cache
def _stored_span_type() -> Callable[[str, str | None], Span]:
    """The class of a task's stored span (made on first use, as opentelemetry is
    imported then)."""
    from opentelemetry import context
    from opentelemetry.trace import NonRecordingSpan, SpanContext, get_current_span

    class StoredSpan(NonRecordingSpan):
        """A non-recording span of a stored W3C trace context, as the no-op tracer makes
        current for it, read from its fields when first asked for."""

        def __init__(self, traceparent: str, tracestate: str | None) -> None:
            self._fields: tuple[str, str | None] | None = (traceparent, tracestate)

        def get_span_context(self) -> SpanContext:
            if self._fields is not None:
                traceparent, tracestate = self._fields
                carrier = {"traceparent": traceparent}
                if tracestate:
                    carrier["tracestate"] = tracestate
                parent = _w3c().extract(carrier, context=context.Context())
                self._context = get_current_span(parent).get_span_context()
                self._fields = None
            return self._context

        def __repr__(self) -> str:
            return f"NonRecordingSpan({self.get_span_context()!r})"

    return StoredSpan


@contextmanager
def task_span(tracer: Tracer, task: Task, *, job_id: Any, stage_type: str) -> Iterator[Span]:
    """The span of one run of a task's handler, `jobnik.task <stage type>`, current
    inside the block.

    Its parent is the task's stored trace context, not the worker's: the attempt is
    part of the request that created the task, so it belongs in that trace as a child.
    A link would suit a run that gathers many unrelated messages (batch fan-in); a
    task's run serves one producer's request. Without a stored context it starts a
    trace of its own, never one of whatever span the worker was started under.

    An exception escaping the block is recorded and sets the span's status to ERROR;
    RetryLaterError (handed back, not failed) and cancellation are only noted.
    """
    from opentelemetry import context
    from opentelemetry.trace import SpanKind, Status, StatusCode

    from ._exceptions import RetryLaterError

    carrier = {key: value for key in _FIELDS if (value := getattr(task, key, None))}
    parent = _w3c().extract(carrier, context=context.Context())
    attributes: dict[str, str | int] = {
        "jobnik.task_id": str(task.id),
        "jobnik.job_id": str(job_id),
        "jobnik.stage_id": str(task.stage_id),
        "jobnik.stage_type": stage_type,
        "jobnik.attempt": task.attempts + 1,
    }
    with tracer.start_as_current_span(
        f"jobnik.task {stage_type}",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except RetryLaterError as exc:
            span.add_event(
                "jobnik.retry_later", {"jobnik.delay_seconds": exc.delay.total_seconds()}
            )
            raise
        except Exception as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise
        except BaseException as exc:  # cancelled: by shutdown, abort or a lost lease
            span.add_event("jobnik.cancelled", {"exception.type": type(exc).__name__})
            raise
