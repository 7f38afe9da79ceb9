"""What the /v1 routers share: their documented errors, the stage type parameter and the
user-metadata route.

No `from __future__ import annotations` here: the route's annotations name a local.
"""

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Concatenate, ParamSpec, TypeVar

from fastapi import APIRouter, Body, Path, Query
from sqlalchemy.ext.asyncio import AsyncSession

from ...db.engine import Database
from ...db.models import Job, Stage, Task
from ...services import progress as progress_of
from ...services.jobs import stages_by_job
from ...services.pages import PageResult
from ...services.stages import tasks_by_stage
from ...services.user_metadata import replace_user_metadata
from ..deps import DatabaseDep, InlineTasks
from ..json_values import JsonObject
from ..presenters import job_out, stage_out
from ..schemas import ErrorMessage, JobOut, OkMessage, Page, StageOut
from ..transaction import in_transaction

P = ParamSpec("P")
RowT = TypeVar("RowT")
OutT = TypeVar("OutT")

# A stage type in a path, and as a list's filter (up to 50 characters, as the column).
StageTypePath = Annotated[str, Path(min_length=1, max_length=50)]
StageTypeQuery = Annotated[str | None, Query(min_length=1, max_length=50)]

Responses = dict[int | str, dict[str, object]]
ERRORS: Responses = {
    400: {"model": ErrorMessage},
    404: {"model": ErrorMessage},
}
CREATE_ERRORS: Responses = {
    **ERRORS,
    409: {"model": ErrorMessage, "description": "IDEMPOTENCY_KEY_REUSED"},
}
# What every route that creates under an Idempotency-Key passes to its decorator.
CREATES: dict[str, Any] = {
    "status_code": 201,
    "response_model_exclude_none": True,
    "responses": CREATE_ERRORS,
}
RETRY_ERRORS: Responses = {
    **ERRORS,
    409: {"model": ErrorMessage, "description": "JOB_NOT_FAILED"},
}
LEASE_ERRORS: Responses = {
    **ERRORS,
    409: {"model": ErrorMessage, "description": "LEASE_LOST"},
}


def answers(
    model: Any, responses: Responses | None = None, *, status_code: int | None = None
) -> dict[str, Any]:
    """What a route passes to its decorator: it answers `model` (with `status_code`, if
    not 200), its unset fields left out, and documents `responses`."""
    given = {"response_model": model, "response_model_exclude_none": True}
    if status_code is not None:
        given["status_code"] = status_code
    return {**given, "responses": responses or {}}


def pages_of(model: type, responses: Responses | None = None) -> dict[str, Any]:
    """What a listing route passes to its decorator: it answers one `Page` of `model`,
    its unset fields left out, and documents `responses` (ERRORS where the path names
    what may not exist)."""
    return answers(Page[model], responses)  # type: ignore[valid-type]


async def one_page(
    db: Database,
    out: Callable[[RowT], OutT],
    find: Callable[Concatenate[AsyncSession, P], Awaitable[PageResult[RowT]]],
    *args: P.args,
    **kwargs: P.kwargs,
) -> Page[OutT]:
    """The page `find(session, *args, **kwargs)` finds, in one transaction, each of its
    items answered as `out` gives it."""

    async def work(s: AsyncSession) -> Page[OutT]:
        found = await find(s, *args, **kwargs)
        return Page[OutT](total=found.total, items=[out(row) for row in found.items])

    return await in_transaction(db, work)


async def stages_out(
    s: AsyncSession, stages: Sequence[Stage], inline: InlineTasks, with_tasks: bool
) -> list[StageOut]:
    """The stages as answered, each with its tasks when asked (should_return_tasks) and
    they are few enough to answer inline."""
    progress = progress_of.of_stages(stages)
    if not with_tasks:
        return [stage_out(st, progress=progress[st.id]) for st in stages]
    inline.check(stages)
    tasks = await tasks_by_stage(s, [st.id for st in stages])
    return [stage_out(st, tasks[st.id], progress[st.id]) for st in stages]


async def jobs_out(s: AsyncSession, jobs: Sequence[Job], with_stages: bool) -> list[JobOut]:
    """The jobs as answered, with their progress, and their stages when asked
    (should_return_stages)."""
    stages = await stages_by_job(s, [j.id for j in jobs])
    by_job, by_stage = progress_of.of_jobs(jobs, stages)

    def with_its_stages(job: Job) -> list[StageOut] | None:
        if not with_stages:
            return None
        return [stage_out(st, progress=by_stage[st.id]) for st in stages[job.id]]

    return [job_out(j, with_its_stages(j), by_job[j.id]) for j in jobs]


def add_user_metadata_route(
    router: APIRouter, model: type[Job] | type[Stage] | type[Task], id_param: str, code: str
) -> None:
    """PATCH /{id}/user-metadata: the whole user metadata replaced by the body's object."""
    entity = model.__name__.lower()

    @router.patch(
        f"/{{{id_param}}}/user-metadata",
        response_model=OkMessage,
        responses=ERRORS,
        name=f"replace_{entity}_user_metadata",
    )
    async def replace(
        db: DatabaseDep,
        row_id: Annotated[uuid.UUID, Path(alias=id_param)],
        metadata: Annotated[JsonObject, Body()],
    ) -> OkMessage:
        await in_transaction(db, replace_user_metadata, model, row_id, metadata)
        return OkMessage(code=code)
