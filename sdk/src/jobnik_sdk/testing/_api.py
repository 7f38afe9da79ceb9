"""The fake manager's REST API: the Jobnik routes, each reading its request as the manager
reads it and answering from the rules (`_state`, `_work`) with the manager's JSON."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from .._models import JobStatus
from .._reports import HeartbeatAnswer
from ..wire import event_json
from ._refusals import Refused, invalid, not_found
from ._requests import (
    ClaimIn,
    DequeueQuery,
    EventsQuery,
    HeartbeatIn,
    HeartbeatsIn,
    JobIn,
    JobsQuery,
    JobStatusIn,
    JsonObject,
    PageQuery,
    PriorityIn,
    Query,
    ReportIn,
    ReportsIn,
    StageIn,
    StagesQuery,
    StageStatusIn,
    StageType,
    TaskEventIn,
    TaskIn,
    TasksQuery,
    WithStagesQuery,
    WithTasksQuery,
)
from ._rows import JobRow, StageRow, TaskRow, job_out, stage_out, task_out
from ._work import State

Answer = tuple[int, Any]  # the status, and the JSON body (None: no body)
ModelT = TypeVar("ModelT", bound=BaseModel)
QueryT = TypeVar("QueryT", bound=Query)
_WAIT_STEP = 0.005  # how often a long-polling claim looks again, in real seconds
_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
_ID = TypeAdapter(uuid.UUID)
_TYPE: TypeAdapter[str] = TypeAdapter(StageType)
_TASKS = TypeAdapter(list[TaskIn])
_METADATA: TypeAdapter[dict[str, Any]] = TypeAdapter(JsonObject)


@dataclass(frozen=True, slots=True)
class Call:
    """One request, as a route sees it."""

    method: str
    path: str
    params: httpx.QueryParams
    raw: bytes
    idempotency_key: str | None
    path_values: tuple[str, ...] = ()

    def id(self, name: str) -> uuid.UUID:
        value: uuid.UUID = _checked(_ID, self.path_values[0], f"path.{name}")
        return value

    def body(self, model: type[ModelT]) -> ModelT:
        try:
            return model.model_validate_json(self.raw)
        except ValidationError as exc:
            raise invalid(_describe(exc)) from None

    def body_of(self, adapter: TypeAdapter[Any]) -> Any:
        try:
            return adapter.validate_json(self.raw)
        except ValidationError as exc:
            raise invalid(_describe(exc)) from None

    def query(self, model: type[QueryT]) -> QueryT:
        try:
            return model.of(self.params)
        except ValidationError as exc:
            raise invalid(_describe(exc, "query")) from None


Route = Callable[["Api", Call], Answer | Awaitable[Answer]]
_ROUTES: list[tuple[str, re.Pattern[str], Route, type[Query]]] = []


def route(method: str, path: str, query: type[Query] = Query) -> Callable[[Route], Route]:
    """A route; `query` names the query string it takes (by default none)."""
    pattern = re.compile("^" + re.sub(r"\{\w+\}", "([^/]+)", path) + "$")

    def register(handler: Route) -> Route:
        _ROUTES.append((method, pattern, handler, query))
        return handler

    return register


class Api:
    """The routes over one fake manager's state, with its idempotency keys."""

    def __init__(self, state: State) -> None:
        self.state = state
        self._answers: dict[str, tuple[str, Answer]] = {}

    async def answer(self, call: Call) -> Answer:
        allowed = False
        for method, pattern, handler, query in _ROUTES:
            match = pattern.match(call.path)
            if match is None:
                continue
            allowed = True
            if method == call.method:
                _known_query_only(call.params, query)
                self.state.settle_due()
                answer = handler(self, dataclasses.replace(call, path_values=match.groups()))
                return await answer if inspect.isawaitable(answer) else answer
        if allowed:
            raise Refused(405, "METHOD_NOT_ALLOWED", "Method Not Allowed")
        raise Refused(404, "NOT_FOUND", "Not Found")

    def once(self, call: Call, payload: BaseModel | list[Any], create: Callable[[], Any]) -> Answer:
        """Create once per idempotency key: a repeat of the request gets the first answer
        again; another request under the same key is refused."""
        key = call.idempotency_key
        if key is None:
            return 201, create()
        if not _IDEMPOTENCY_KEY.match(key):
            raise invalid("header.Idempotency-Key: 1 to 255 visible ASCII characters")
        dumped = (
            payload.model_dump(mode="json", by_alias=True)
            if isinstance(payload, BaseModel)
            else [p.model_dump(mode="json", by_alias=True) for p in payload]
        )
        fingerprint = json.dumps([call.method, call.path, dumped], sort_keys=True)
        seen = self._answers.get(key)
        if seen is not None:
            if seen[0] != fingerprint:
                raise Refused(
                    409,
                    "IDEMPOTENCY_KEY_REUSED",
                    "This Idempotency-Key was already used for a different request",
                )
            return seen[1]
        answer = (201, create())
        self._answers[key] = (fingerprint, answer)
        return answer


# ---- jobs ---------------------------------------------------------------------------------


@route("GET", "/v1/jobs", query=JobsQuery)
def _find_jobs(api: Api, call: Call) -> Answer:
    q = call.query(JobsQuery)
    rows = [
        job
        for job in api.state.jobs.values()
        if (q.job_name is None or job.name == q.job_name)
        and (q.priority is None or job.priority is q.priority)
        and (not q.status or job.status in q.status)
        and _within(job.creation_time, q.from_date, q.end_date)
    ]
    return _page(rows, q, lambda job: job_out(job, with_stages=q.should_return_stages))


@route("POST", "/v1/jobs")
def _create_job(api: Api, call: Call) -> Answer:
    spec = call.body(JobIn)

    def create() -> Any:
        job = api.state.create_job(spec)
        if not spec.stages:
            return job_out(job)
        body = job_out(job)
        body["stages"] = [stage_out(stage, with_tasks=True) for stage in job.stages]
        return body

    return api.once(call, spec, create)


@route("GET", "/v1/jobs/{jobId}", query=WithStagesQuery)
def _get_job(api: Api, call: Call) -> Answer:
    job = api.state.job(call.id("jobId"))
    return 200, job_out(job, with_stages=call.query(WithStagesQuery).should_return_stages)


@route("DELETE", "/v1/jobs/{jobId}")
def _delete_job(api: Api, call: Call) -> Answer:
    api.state.delete_job(call.id("jobId"))
    return 200, {"code": "JOB_DELETED_SUCCESSFULLY"}


@route("PATCH", "/v1/jobs/{jobId}/priority")
def _job_priority(api: Api, call: Call) -> Answer:
    job_id = call.id("jobId")
    if not api.state.set_priority(job_id, call.body(PriorityIn).priority):
        return 204, None
    return 200, {"code": "JOB_MODIFIED_SUCCESSFULLY"}


@route("PUT", "/v1/jobs/{jobId}/status")
def _job_status(api: Api, call: Call) -> Answer:
    job_id = call.id("jobId")
    api.state.set_job_status(job_id, JobStatus(call.body(JobStatusIn).status))
    return 200, {"code": "JOB_MODIFIED_SUCCESSFULLY"}


@route("POST", "/v1/jobs/{jobId}/retry")
def _retry_job(api: Api, call: Call) -> Answer:
    return 200, job_out(api.state.retry_job(call.id("jobId")))


@route("GET", "/v1/jobs/{jobId}/stages", query=WithTasksQuery)
def _job_stages(api: Api, call: Call) -> Answer:
    job = api.state.job(call.id("jobId"))
    with_tasks = call.query(WithTasksQuery).should_return_tasks
    return 200, [stage_out(stage, with_tasks=with_tasks) for stage in job.stages]


@route("POST", "/v1/jobs/{jobId}/stage")
def _add_stage(api: Api, call: Call) -> Answer:
    job_id = call.id("jobId")
    spec = call.body(StageIn)
    return api.once(
        call,
        spec,
        lambda: stage_out(api.state.add_stage(job_id, spec), with_tasks=bool(spec.tasks)),
    )


@route("GET", "/v1/jobs/{jobId}/events", query=EventsQuery)
def _job_events(api: Api, call: Call) -> Answer:
    job = api.state.job(call.id("jobId"))
    return _page(
        api.state.events.of_job(job.id),
        call.query(EventsQuery),
        lambda e: event_json(e.model_dump(mode="json", by_alias=True)),
    )


# ---- stages -------------------------------------------------------------------------------


@route("GET", "/v1/stages", query=StagesQuery)
def _find_stages(api: Api, call: Call) -> Answer:
    q = call.query(StagesQuery)
    rows = [
        stage
        for stage in api.state.stages.values()
        if (q.job_id is None or stage.job_id == q.job_id)
        and (q.stage_type is None or stage.type == q.stage_type)
        and (q.stage_operation_status is None or stage.status is q.stage_operation_status)
    ]
    return _page(rows, q, lambda stage: stage_out(stage, with_tasks=q.should_return_tasks))


@route("GET", "/v1/stages/{stageId}", query=WithTasksQuery)
def _get_stage(api: Api, call: Call) -> Answer:
    stage = api.state.stage(call.id("stageId"))
    return 200, stage_out(stage, with_tasks=call.query(WithTasksQuery).should_return_tasks)


@route("GET", "/v1/stages/{stageId}/summary")
def _stage_summary(api: Api, call: Call) -> Answer:
    counts = api.state.stage(call.id("stageId")).summary()
    return 200, {to_camel(status): n for status, n in counts.items()}


@route("PUT", "/v1/stages/{stageId}/status")
def _stage_status(api: Api, call: Call) -> Answer:
    stage_id = call.id("stageId")
    call.body(StageStatusIn)
    api.state.approve(stage_id)
    return 200, {"code": "STAGE_MODIFIED_SUCCESSFULLY"}


@route("GET", "/v1/stages/{stageId}/tasks", query=PageQuery)
def _stage_tasks(api: Api, call: Call) -> Answer:
    stage = api.state.stage(call.id("stageId"))
    return _page(stage.tasks, call.query(PageQuery), task_out)


@route("POST", "/v1/stages/{stageId}/tasks")
def _add_tasks(api: Api, call: Call) -> Answer:
    stage_id = call.id("stageId")
    specs: list[TaskIn] = call.body_of(_TASKS)
    if not specs:
        raise invalid("body: List should have at least 1 item after validation, not 0")
    return api.once(
        call, specs, lambda: [task_out(task) for task in api.state.add_tasks(stage_id, specs)]
    )


@route("PATCH", "/v1/stages/{stageType}/tasks/dequeue", query=DequeueQuery)
def _dequeue(api: Api, call: Call) -> Answer:
    stage_type = _checked(_TYPE, call.path_values[0], "path.stageType")
    q = call.query(DequeueQuery)
    lease = timedelta(seconds=q.lease_seconds) if q.lease_seconds else None
    claimed = api.state.claim([stage_type], limit=1, lease=lease, worker=q.worker)
    if not claimed:
        raise not_found("Task", f"No task of stage type '{stage_type}' is ready to be claimed")
    return 200, task_out(claimed[0])


# ---- tasks --------------------------------------------------------------------------------


@route("POST", "/v1/tasks/claim")
async def _claim(api: Api, call: Call) -> Answer:
    spec = call.body(ClaimIn)
    lease = timedelta(seconds=spec.lease_seconds) if spec.lease_seconds else None
    deadline = time.monotonic() + (spec.wait_seconds or 0.0)
    while True:
        claimed = api.state.claim(
            spec.stage_types, limit=spec.limit, lease=lease, worker=spec.worker
        )
        if claimed or time.monotonic() >= deadline:
            break
        await asyncio.sleep(min(_WAIT_STEP, max(0.0, deadline - time.monotonic())))
        api.state.settle_due()
    body: dict[str, Any] = {"items": [task_out(task) for task in claimed]}
    if spec.with_context and claimed:
        stages = list(dict.fromkeys(api.state.stages[t.stage_id] for t in claimed))
        jobs = list(dict.fromkeys(api.state.jobs[st.job_id] for st in stages))
        # As the manager answers a claim's context: without progress, read on its own.
        body["stages"] = [stage_out(stage, progress=False) for stage in stages]
        body["jobs"] = [job_out(job, progress=False) for job in jobs]
    return 200, body


@route("POST", "/v1/tasks/reports")
def _reports(api: Api, call: Call) -> Answer:
    items = call.body(ReportsIn).reports
    answers = api.state.settle([item.report(item.task_id) for item in items])
    return 200, {
        "items": [
            {"taskId": str(item.task_id), "error": answer.body()}
            if isinstance(answer, Refused)
            else {"taskId": str(item.task_id), "task": task_out(answer)}
            for item, answer in zip(items, answers, strict=True)
        ]
    }


@route("POST", "/v1/tasks/heartbeats")
def _heartbeats(api: Api, call: Call) -> Answer:
    spec = call.body(HeartbeatsIn)
    lease = timedelta(seconds=spec.lease_seconds) if spec.lease_seconds else None
    items: list[dict[str, Any]] = []
    for beat in spec.heartbeats:
        try:
            renewed = api.state.heartbeat(
                beat.task_id, beat.lease_id, beat.percent, beat.message, lease
            )
        except Refused as refused:
            items.append({"taskId": str(beat.task_id), "error": refused.body()})
        else:
            items.append({"taskId": str(beat.task_id), **_renewed(renewed)})
    return 200, {"items": items}


@route("GET", "/v1/tasks", query=TasksQuery)
def _find_tasks(api: Api, call: Call) -> Answer:
    q = call.query(TasksQuery)
    rows = [
        task
        for task in api.state.tasks.values()
        if (q.stage_id is None or task.stage_id == q.stage_id)
        and (q.stage_type is None or api.state.stages[task.stage_id].type == q.stage_type)
        and (q.status is None or task.status is q.status)
        and _within(task.creation_time, q.from_date, q.end_date)
    ]
    return _page(rows, q, task_out)


@route("GET", "/v1/tasks/{taskId}")
def _get_task(api: Api, call: Call) -> Answer:
    return 200, task_out(api.state.task(call.id("taskId")))


@route("PUT", "/v1/tasks/{taskId}/status")
def _report_one(api: Api, call: Call) -> Answer:
    task_id = call.id("taskId")
    (answer,) = api.state.settle([call.body(ReportIn).report(task_id)])
    if isinstance(answer, Refused):
        raise answer
    return 200, task_out(answer)


@route("POST", "/v1/tasks/{taskId}/events")
def _task_event(api: Api, call: Call) -> Answer:
    spec = call.body(TaskEventIn)
    event = api.state.add_task_event(call.id("taskId"), spec)
    return 201, event_json(event.model_dump(mode="json", by_alias=True))


@route("POST", "/v1/tasks/{taskId}/heartbeat")
def _heartbeat(api: Api, call: Call) -> Answer:
    task_id = call.id("taskId")
    spec = call.body(HeartbeatIn)
    lease = timedelta(seconds=spec.lease_seconds) if spec.lease_seconds else None
    renewed = api.state.heartbeat(task_id, spec.lease_id, spec.percent, spec.message, lease)
    return 200, _renewed(renewed)


# ---- helpers ------------------------------------------------------------------------------


def _renewed(renewed: HeartbeatAnswer) -> dict[str, Any]:
    return renewed.model_dump(mode="json", by_alias=True)


def _replacing_metadata(kind: str) -> Route:
    """PATCH /v1/{kind}s/{id}/user-metadata: the object replaces the entity's metadata."""

    def replace(api: Api, call: Call) -> Answer:
        row: JobRow | StageRow | TaskRow = getattr(api.state, kind)(call.id(f"{kind}Id"))
        row.user_metadata = call.body_of(_METADATA)
        row.update_time = api.state.clock.now()
        return 200, {"code": f"{kind.upper()}_MODIFIED_SUCCESSFULLY"}

    return replace


for _kind in ("job", "stage", "task"):
    route("PATCH", f"/v1/{_kind}s/{{{_kind}Id}}/user-metadata")(_replacing_metadata(_kind))


def _page(rows: Iterable[Any], q: PageQuery, render: Callable[[Any], Any]) -> Answer:
    items = list(rows)
    start = (q.page - 1) * q.page_size
    return 200, {
        "total": len(items),
        "items": [render(r) for r in items[start : start + q.page_size]],
    }


def _within(moment: datetime, start: datetime | None, end: datetime | None) -> bool:
    def aware(value: datetime) -> datetime:
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)

    return (start is None or moment >= aware(start)) and (end is None or moment <= aware(end))


def _checked(adapter: TypeAdapter[Any], value: str, where: str) -> Any:
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        raise invalid(_describe(exc, where)) from None


def _known_query_only(params: httpx.QueryParams, query: type[Query]) -> None:
    """A parameter the route does not take is refused, before anything happens."""
    for name in params:
        if name not in query.model_fields:
            raise invalid(f"query.{name}: Unknown query parameter")


def _describe(exc: ValidationError, prefix: str | None = None) -> str:
    """As the manager words a validation error: `where: what`, for up to five."""
    errors = exc.errors()
    parts = []
    for err in errors[:5]:
        loc = ".".join(str(p) for p in ((prefix,) if prefix else ()) + tuple(err["loc"]))
        parts.append(f"{loc or 'body'}: {err['msg']}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more
