"""/ojs/v1/cron: the Open Job Spec's cron jobs, as our schedules. A cron job's template
(an OJS job: type, args, meta, options) is validated as a PUSH body would be and kept as
the schedule's job, a job of one stage (its queue) of one task; each time makes it, by
the schedule's rules (one job a time across replicas, overlap skipped or allowed)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from ...db.models import Schedule
from ...domain import ojs
from ...domain.errors import DomainError
from ...domain.schedules import Missed, Overlap, Timing
from ...services import schedules
from ...services.pages import PageRequest
from ..auth import creator, listing_owner
from ..deps import DatabaseDep
from ..ojs_push import new_task
from ..ojs_wire import BASE, OjsError, answer, invalid, read_body, when
from ..transaction import in_transaction

router = APIRouter(tags=["open job spec"])

_MOST_LISTED = 1000


def _cron(row: Schedule) -> dict[str, Any]:
    said = {
        "name": row.name,
        "expression": row.cron,
        "timezone": row.timezone,
        "overlap_policy": row.overlap,
        "enabled": row.paused_at is None,
        "next_run_at": when(row.next_run_at) if row.paused_at is None else None,
        "last_run_at": when(row.last_run_at),
        "created_at": when(row.created_at),
        "job_template": _template_of(row.job),
    }
    return {k: v for k, v in said.items() if v is not None}


def _template_of(job: dict[str, Any]) -> dict[str, Any]:
    """The OJS job a stored schedule's job stands for."""
    stage = job["stages"][0]
    data = stage["tasks"][0]["data"]
    options = {"queue": stage["type"], "priority": data.get("priority", 0)}
    return {"type": data["type"], "args": data["args"], "meta": data["meta"], "options": options}


def _template(body: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The cron job's OJS job (its `job_template`, or the binding's type, args and
    options beside the name), checked as a PUSH; kept as a v1 job body."""
    given = body.get("job_template")
    if given is None:
        given = {k: body[k] for k in ("type", "args", "meta", "options") if k in body}
    if not isinstance(given, dict):
        raise invalid("job_template: a JSON object (an OJS job: type, args, options)")
    kind, queue, priority, task = new_task({"args": [], **given}, now)
    if task.id is not None or task.not_before is not None or task.expires_at is not None:
        raise invalid("job_template: no id, delay_until or expires_at (times of one job)")
    stored_task: dict[str, Any] = {"data": task.data, "maxAttempts": task.max_attempts}
    if task.retry_policy is not None:
        stored_task["retryPolicy"] = task.retry_policy.to_json()
    if task.timeout_seconds is not None:
        stored_task["timeoutSeconds"] = task.timeout_seconds
    stage = {"type": queue, "data": {}, "tasks": [stored_task]}
    return {
        "name": kind[:50],
        "data": {},
        "priority": ojs.priority_of(priority).value,
        "stages": [stage],
    }


@router.post(f"{BASE}/cron", status_code=201)
async def register(request: Request, db: DatabaseDep) -> Response:
    """Register a cron job: 409 when one of that name exists."""
    body = await read_body(request)
    name = body.get("name")
    if not isinstance(name, str) or not 0 < len(name) <= 100:
        raise invalid("name: required, a string of up to 100 characters")
    expression = body.get("expression", body.get("cron"))
    if not isinstance(expression, str) or not expression.strip():
        raise invalid("expression: required, a cron expression")
    timezone = body.get("timezone", "UTC")
    if not isinstance(timezone, str):
        raise invalid("timezone: an IANA time zone name")
    overlap = body.get("overlap_policy", Overlap.SKIP.value)  # ojs-cron: skip unless told
    if overlap not in Overlap._value2member_map_:
        raise invalid("overlap_policy: allow or skip")
    try:
        timing = Timing(expression, None, timezone)
    except (ValueError, DomainError) as exc:
        raise invalid(f"expression: {exc}") from None
    spec = schedules.ScheduleSpec(
        name=name,
        timing=timing,
        job=_template(body, db.clock.now()),
        overlap=Overlap(overlap),
        missed=Missed.ONE,
    )

    async def work(s: AsyncSession) -> dict[str, Any]:
        if await s.get(Schedule, name) is not None:
            raise OjsError(409, "duplicate", f"A cron job named '{name}' exists already.")
        row, _ = await schedules.put(s, spec, creator())
        return _cron(row)

    return answer({"cron": await in_transaction(db, work)}, 201)


@router.get(f"{BASE}/cron")
async def crons(db: DatabaseDep) -> Response:
    """The cron jobs, by name (a producer's own)."""
    page = PageRequest(1, _MOST_LISTED)
    found = await in_transaction(db, schedules.find, listing_owner(), page)
    listed = [_cron(row) for row in found.items if row.cron is not None]
    pagination = {"total": len(listed), "has_more": found.total > _MOST_LISTED}
    return answer({"crons": listed, "pagination": pagination}, 200)


@router.delete(BASE + "/cron/{name}")
async def unregister(db: DatabaseDep, name: str) -> Response:
    """Remove a cron job (the jobs it made stay)."""

    async def work(s: AsyncSession) -> None:
        if await s.get(Schedule, name) is None:
            raise OjsError(404, "not_found", f"Cron job '{name}' not found.")
        await schedules.remove(s, name)

    await in_transaction(db, work)
    return answer({"cron": {"name": name}, "deleted": True, "name": name}, 200)
