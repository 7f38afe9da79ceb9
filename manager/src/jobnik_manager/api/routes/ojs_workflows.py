"""/ojs/v1/workflows: the spec's chain, group and batch (services/workflows.py). A chain
is one job whose stages are its steps, each of one task: our stages run in order, the
next opening when the one before completes, and a step that fails for good fails the
job, so the steps after it never run. A group's and a batch's jobs are jobs of their own,
run side by side; a batch's callbacks are jobs made with it, WAITING until its jobs are
all final. A workflow inside another is refused (nesting depth 1)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from uuid6 import uuid7

from ...domain.errors import RuleViolation
from ...domain.ojs import State
from ...domain.statuses import StageStatus, TaskStatus
from ...domain.workflows import CALLBACKS, MAX_JOBS, Kind, WorkflowState
from ...services.specs import NewJob
from ...services.workflow_events import record_events
from ...services.workflows import (
    JOB,
    NewWorkflow,
    WorkflowView,
    cancel_workflow,
    create_workflow,
    read_workflow,
    tasks_of,
)
from ..auth import creator
from ..deps import DatabaseDep
from ..ojs_push import new_job
from ..ojs_wire import BASE, OjsError, answer, envelope, read_body, when
from ..transaction import in_transaction

router = APIRouter(tags=["open job spec"])
Tasks = dict[uuid.UUID, list[dict[str, Any]]]  # a workflow's tasks, by job

_LISTED = {Kind.CHAIN: "steps", Kind.GROUP: "jobs", Kind.BATCH: "jobs"}
# A step's or a job's state in a workflow, where the spec's list is shorter than a job's.
_ITEM_STATE = {
    State.AVAILABLE: "pending",
    State.SCHEDULED: "pending",
    State.RETRYABLE: "pending",
    State.DISCARDED: "failed",
}
_NOT_STARTED = (StageStatus.CREATED, StageStatus.WAITING)


def _refused(path: str, message: str) -> OjsError:
    return OjsError(400, "invalid_workflow", f"{path}: {message}")


def _not_found(workflow_id: str) -> OjsError:
    return OjsError(404, "not_found", f"Workflow '{workflow_id}' not found.")


def _workflow_of(body: dict[str, Any], now: datetime) -> NewWorkflow:
    """A workflow body as the jobs it makes, or the refusal that names the first field
    wrong (by its JSON path)."""
    try:
        kind = Kind(str(body.get("type")))
    except ValueError:
        raise _refused("$.type", "required: chain, group or batch") from None
    name = body.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > 200):
        raise _refused("$.name", "a string of up to 200 characters")
    listed = _LISTED[kind]
    items = body.get(listed)
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_JOBS:
        raise _refused(f"$.{listed}", f"required, a list of 1 to {MAX_JOBS:,} jobs")
    workflow_id = uuid.UUID(str(uuid7()))

    def job(path: str, item: object, index: int, role: str) -> NewJob:
        if not isinstance(item, dict):
            raise _refused(path, "a job: a JSON object with its type and args")
        if item.get("type") in set(Kind) and ({"steps", "jobs"} & item.keys()):
            raise _refused(path, "a workflow inside a workflow is not supported (depth 1)")
        mark = {"id": str(workflow_id), "kind": kind.value, "index": index, "role": role}
        try:
            return new_job(item, now, mark, waiting=role != JOB)
        except OjsError as bad:
            raise _refused(path, str(bad)) from None

    jobs = [job(f"$.{listed}[{i}]", item, i, JOB) for i, item in enumerate(items)]
    callbacks: dict[str, NewJob] = {}
    if kind is Kind.BATCH:
        given = body.get("callbacks")
        if not isinstance(given, dict) or not given.keys() & set(CALLBACKS):
            raise _refused("$.callbacks", "required, with on_complete, on_success or on_failure")
        for role in (r for r in CALLBACKS if r in given):
            callbacks[role] = job(f"$.callbacks.{role}", given[role], 0, role)
    if kind is Kind.CHAIN:  # one job, a stage a step
        first = jobs[0]
        stages = [stage for step in jobs for stage in step.stages]
        jobs = [
            NewJob(
                (name or first.name)[:50],
                {},
                first.priority,
                owner=first.owner,
                stages=stages,
                priority_number=first.priority_number,
            )
        ]
    return NewWorkflow(workflow_id, kind, name, jobs, callbacks, creator())


def _item(index: int, task: dict[str, Any], state: WorkflowState, now: datetime) -> dict[str, Any]:
    """A step of a chain, a job of a group or batch, or a callback, as the spec lists it."""
    data = task["data"] if isinstance(task["data"], dict) else {}
    item: dict[str, Any] = {"index": index, "type": data.get("type"), "queue": task["stage_type"]}
    if (
        StageStatus(task["stage_status"]) in _NOT_STARTED
        and not TaskStatus(task["status"]).is_final
    ):
        return {**item, "state": "cancelled" if state.is_final else "waiting", "job_id": None}
    job = envelope(task, now)
    said = State(job["state"])
    item.update(state=_ITEM_STATE.get(said, said.value), job_id=job["id"])
    for field in ("result", "error", "started_at", "completed_at", "cancelled_at"):
        if field in job:
            item[field] = job[field]
    if said is State.DISCARDED:
        item["attempt"] = job["attempt"]
    return item


def _present(
    view: WorkflowView, tasks: dict[uuid.UUID, list[dict[str, Any]]], now: datetime
) -> dict[str, Any]:
    said: dict[str, Any] = {"id": str(view.id), "type": view.kind.value, "state": view.state.value}
    if view.name is not None:
        said["name"] = view.name
    if view.kind is Kind.CHAIN:
        rows = tasks.get(view.jobs[0].job_id, []) if view.jobs else []
    else:
        rows = [tasks[m.job_id][0] for m in view.jobs if tasks.get(m.job_id)]
    items = [_item(i, row, view.state, now) for i, row in enumerate(rows)]
    listed = _LISTED[view.kind]
    completed = [i for i in items if i["state"] == "completed"]
    failed = [i for i in items if i["state"] == "failed"]
    said.update(
        {
            listed: items,
            f"{listed}_total": len(items),
            f"{listed}_completed": len(completed),
            f"{listed}_failed": len(failed),
        }
    )
    if view.kind is Kind.BATCH:
        said["callbacks"] = {
            m.role: {
                k: v
                for k, v in _item(0, tasks[m.job_id][0], view.state, now).items()
                if k != "index"
            }
            for m in view.callbacks
            if tasks.get(m.job_id)
        }
    started = [i["started_at"] for i in items if "started_at" in i]
    metadata: dict[str, Any] = {
        "created_at": when(view.created_at),
        "job_count": len(items),
        "completed_count": len(completed),
        "failed_count": len(failed),
    }
    if started:
        metadata["started_at"] = min(started)
    if view.cancelled_at is not None:
        metadata["cancelled_at"] = metadata["completed_at"] = when(view.cancelled_at)
    elif view.state.is_final:
        ended = [str(i["completed_at"]) for i in items if i.get("completed_at")]
        metadata["completed_at"] = max(ended) if ended else when(now)
    said["metadata"] = metadata
    if failed:
        said["failed_job_ids"] = [i["job_id"] for i in failed]
        said["errors"] = [
            {"job_id": i["job_id"], **i.get("error", {}), "attempt": i.get("attempt")}
            for i in failed
        ]
        if view.kind is Kind.CHAIN:
            said["failed_step_index"] = failed[0]["index"]
    return said


async def _read(db: Any, workflow_id: str) -> dict[str, Any]:
    try:
        parsed = uuid.UUID(workflow_id) if len(workflow_id) <= 64 else None
    except ValueError:
        parsed = None

    async def work(s: AsyncSession, key: uuid.UUID) -> tuple[WorkflowView, Tasks] | None:
        # The workflow and its jobs' tasks in one transaction: one consistent reading.
        view = await read_workflow(s, key)
        return None if view is None else (view, await tasks_of(s, view))

    found = await in_transaction(db, work, parsed) if parsed else None
    if found is None:
        raise _not_found(workflow_id)
    return _present(*found, db.clock.now())


@router.post(f"{BASE}/workflows", status_code=201)
async def create(request: Request, db: DatabaseDep) -> Response:
    """Create a workflow and start it: a chain's first step, a group's or a batch's
    jobs, open to FETCH at once."""
    new = _workflow_of(await read_body(request), db.clock.now())
    try:
        await in_transaction(db, create_workflow, new)
    except IntegrityError as exc:  # a job id given twice, or another job's
        raise OjsError(409, "duplicate", "A job with one of these ids exists already.") from exc
    said = await _read(db, str(new.id))
    return answer({"workflow": said}, 201, {"Location": f"{BASE}/workflows/{new.id}"})


@router.get(BASE + "/workflows/{workflowId}")
async def get(db: DatabaseDep, workflowId: str) -> Response:
    """The workflow as it stands: its state, each step's or job's, the callbacks'."""
    return answer({"workflow": await _read(db, workflowId)}, 200)


@router.delete(BASE + "/workflows/{workflowId}")
async def cancel(db: DatabaseDep, workflowId: str) -> Response:
    """Cancel it: its jobs not final are aborted and no callback fires; a workflow
    already final is a conflict."""
    said = await _read(db, workflowId)
    if said["state"] != WorkflowState.RUNNING:
        message = f"Workflow '{workflowId}' is already in terminal state '{said['state']}'."
        raise OjsError(409, "conflict", message)
    try:
        await in_transaction(db, cancel_workflow, uuid.UUID(said["id"]))
    except RuleViolation as exc:  # it finished meanwhile
        raise OjsError(409, "conflict", str(exc)) from exc
    await in_transaction(db, record_events, uuid.UUID(said["id"]))  # workflow.cancelled
    return answer({"workflow": await _read(db, workflowId)}, 200)
