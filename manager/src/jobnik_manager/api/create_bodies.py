"""The bodies of the creating calls: tasks counted before any is validated, and a large
body validated and converted a slice of tasks at a time.

FastAPI validates a body in one go on the event loop: for 100,000 tasks that holds the
loop for half a second, and an invalid body's errors are all gathered, one per task,
however many. The routes of `CreateRoute` take their body here instead, as the edge
parsed it (api/edge.py): one with more than `max_tasks_per_call` tasks is answered 413
before a task is validated; one with many tasks is validated `SLICE` tasks at a time,
the loop free for other requests in between, and the first slice with an error ends it
(400, its first errors). FastAPI then takes the validated model as it is. A small body goes on to
FastAPI as before. The routes convert a large body's tasks as they are inserted
(`new_job`, ...), answer the tasks they created (`created_task_bodies`) in slices, and
create a large body with the cyclic garbage collector paused (`_collector_paused`).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute
from pydantic import TypeAdapter, ValidationError

from ..services.specs import Converted, NewJob, NewStage, NewTask
from ..settings import Settings
from .auth import creator
from .edge import EdgeRequest, EdgeRoute, edge_json
from .errors import describe_errors
from .presenters import task_bodies
from .schemas import JobCreate, StageCreate, TaskCreate

SLICE = 2_000
"""Tasks validated, or converted, between two turns of the event loop."""

PAUSE_COLLECTOR_FROM = 1024 * 1024
"""Bodies of this many bytes or more are created with the cyclic collector paused."""

Location = tuple[str | int, ...]
TaskLists = list[tuple[Location, list[Any]]]
_TASKS = TypeAdapter(list[TaskCreate])


def _job_tasks(body: Any) -> TaskLists:
    stages = body.get("stages") if isinstance(body, dict) else None
    if not isinstance(stages, list):
        return []
    return [
        (("stages", i, "tasks"), stage["tasks"])
        for i, stage in enumerate(stages)
        if isinstance(stage, dict) and isinstance(stage.get("tasks"), list)
    ]


def _stage_tasks(body: Any) -> TaskLists:
    tasks = body.get("tasks") if isinstance(body, dict) else None
    return [(("tasks",), tasks)] if isinstance(tasks, list) else []


def _listed_tasks(body: Any) -> TaskLists:
    return [((), body)] if isinstance(body, list) else []


# Where each creating body holds its tasks, by the body's type.
_TASK_LISTS: dict[Any, Callable[[Any], TaskLists]] = {
    JobCreate: _job_tasks,
    StageCreate: _stage_tasks,
    list[TaskCreate]: _listed_tasks,
}


class TooManyTasks(HTTPException):
    def __init__(self, count: int, limit: int) -> None:
        super().__init__(
            413,
            f"{count:,} tasks in one call, more than the {limit:,} a call may create; "
            "send them in several calls: POST /v1/stages/{stageId}/tasks adds tasks to a "
            "stage that exists",
        )


class InvalidBody(HTTPException):
    def __init__(self, exc: ValidationError, at: Location = (), first: int = 0) -> None:
        """`exc` of a slice of tasks, the first of them `first` in the list at `at`; or,
        with neither given, of the whole body."""
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        for error in errors:
            loc = error["loc"]
            if at or first:
                index, *rest = loc
                loc = (*at, first + int(index), *rest)
            error["loc"] = loc
        super().__init__(400, describe_errors(errors))


class CreateRoute(EdgeRoute):
    """A route whose JSON body is one of the creating bodies above."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        annotation = self.body_field.field_info.annotation if self.body_field else None
        task_lists = _TASK_LISTS.get(annotation)
        if task_lists is None:
            return super().get_route_handler()
        handle = APIRoute.get_route_handler(self)
        body_type = annotation

        async def route(request: Request) -> Response:
            wrapped = _CreateRequest(request.scope, request.receive, body_type, task_lists)
            response: Response
            if int(request.headers.get("content-length", 0)) < PAUSE_COLLECTOR_FROM:
                response = await handle(wrapped)
            else:
                with _collector_paused():
                    response = await handle(wrapped)
            return response

        return route


_pauses = 0


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector put off for the block (and any block of this kind
    overlapping it). A large create allocates a few objects per task and holds them
    until it has answered; the collector's full passes over them take longer as they
    grow, 150 ms each near 100,000 tasks, the event loop held all the while. None of
    them is in a cycle: what the create drops is freed as it goes, without the collector."""
    global _pauses
    if _pauses == 0 and not gc.isenabled():
        yield  # paused by someone else, who will resume it
        return
    _pauses += 1
    gc.disable()
    try:
        yield
    finally:
        _pauses -= 1
        if _pauses == 0:
            gc.enable()


class _CreateRequest(EdgeRequest):
    def __init__(
        self, scope: Any, receive: Any, body_type: Any, task_lists: Callable[[Any], TaskLists]
    ) -> None:
        super().__init__(scope, receive)
        self.body_type = body_type
        self.task_lists = task_lists

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await edge_json(self)
            lists = self.task_lists(body)
            count = sum(len(tasks) for _, tasks in lists)
            settings: Settings = self.app.state.settings
            if count > settings.max_tasks_per_call:
                raise TooManyTasks(count, settings.max_tasks_per_call)
            self._json = await _validated(self.body_type, body, lists) if count > SLICE else body
        return self._json


async def _validated(body_type: Any, body: Any, lists: TaskLists) -> Any:
    """`body` as the `body_type` model, its tasks validated a slice at a time: the
    rest of the body first, with its task lists emptied (they are held in `lists`)."""
    model: Any = None
    if body_type is JobCreate or body_type is StageCreate:
        for at, _ in lists:
            _parent(body, at)["tasks"] = []
        try:
            model = TypeAdapter(body_type).validate_python(body)
        except ValidationError as exc:
            raise InvalidBody(exc) from None
    validated = [await _tasks(tasks, at) for at, tasks in lists]
    if body_type is JobCreate:
        for (at, _), tasks in zip(lists, validated, strict=True):
            model.stages[at[1]].tasks = tasks
        return model
    if body_type is StageCreate:
        model.tasks = validated[0]
        return model
    return validated[0] if validated else body


def _parent(body: Any, at: Location) -> Any:
    for step in at[:-1]:
        body = body[step]
    return body


async def _tasks(tasks: list[Any], at: Location) -> list[TaskCreate]:
    out: list[TaskCreate] = []
    for start in range(0, len(tasks), SLICE):
        try:
            out.extend(_TASKS.validate_python(tasks[start : start + SLICE]))
        except ValidationError as exc:
            raise InvalidBody(exc, at, start) from None
        await asyncio.sleep(0)
    return out


async def created_task_bodies(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`task_bodies(rows)` of the rows a create inserted, a slice at a time."""
    if len(rows) <= SLICE:
        return task_bodies(rows)
    out: list[dict[str, Any]] = []
    for start in range(0, len(rows), SLICE):
        out.extend(task_bodies(rows[start : start + SLICE]))
        await asyncio.sleep(0)
    return out


def new_tasks(tasks: Sequence[TaskCreate]) -> Sequence[NewTask]:
    if len(tasks) <= SLICE:
        return [task.to_new() for task in tasks]
    return Converted(tasks, TaskCreate.to_new)


def new_stage(payload: StageCreate) -> NewStage:
    """`payload.to_new()`, a large stage's tasks converted as they are inserted."""
    bare = payload.model_copy(update={"tasks": None}).to_new()
    tasks = new_tasks(payload.tasks or ())
    return replace(bare, tasks=tasks, without_tasks=payload.tasks == [])


def new_job(payload: JobCreate) -> NewJob:
    """`payload.to_new()`, its large stages' tasks converted as they are inserted."""
    stages = [new_stage(stage) for stage in payload.stages or ()]
    new = payload.model_copy(update={"stages": None}).to_new()
    return replace(new, stages=stages, owner=creator())
