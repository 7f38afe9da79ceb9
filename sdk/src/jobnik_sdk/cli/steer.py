"""Commands that change a job or a stage: approve, pause, resume, abort, priority."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import typer

from .._client import JobnikClient
from .._models import Priority
from . import output
from ._run import JobArg, Manager, Token, Url, chosen_job, run


def _done(message: str) -> None:
    output.stdout().print(message, soft_wrap=True)


def _steer(manager: Manager, call: Callable[[JobnikClient], Awaitable[object]], said: str) -> None:
    """Make one call of the client; say `said` once it is done."""

    async def work(client: JobnikClient) -> None:
        await call(client)

    run(manager, work)
    _done(said)


def _steer_job(
    url: str | None, token: str | None, given: str, how: str, call: Callable[..., Any]
) -> None:
    """`call(client)(job_id)` on the job `given` names; say it was done `how`."""
    manager, job_id = chosen_job(url, token, given)
    _steer(manager, lambda client: call(client)(job_id), f"job {job_id} {how}")


def approve(
    stage_id: Annotated[str, typer.Argument(metavar="STAGE", help="The WAITING stage's id.")],
    url: Url = None,
    token: Token = None,
) -> None:
    """Let a WAITING stage run."""
    _steer(
        Manager.chosen(url, token),
        lambda client: client.approve_stage(stage_id),
        f"stage {stage_id} approved",
    )


def pause(job_id: JobArg, url: Url = None, token: Token = None) -> None:
    """Stop handing out the job's tasks (running ones may still report)."""
    _steer_job(url, token, job_id, "paused", lambda client: client.pause)


def resume(job_id: JobArg, url: Url = None, token: Token = None) -> None:
    """Resume a paused job."""
    _steer_job(url, token, job_id, "resumed", lambda client: client.resume)


def abort(job_id: JobArg, url: Url = None, token: Token = None) -> None:
    """Abort the job: its unfinished stages and tasks become ABORTED."""
    _steer_job(url, token, job_id, "aborted", lambda client: client.abort)


def priority(
    job_id: JobArg,
    level: Annotated[Priority, typer.Argument(metavar="LEVEL", help="The new priority.")],
    url: Url = None,
    token: Token = None,
) -> None:
    """Change the job's priority: VERY_HIGH, HIGH, MEDIUM, LOW or VERY_LOW."""

    manager, job_id = chosen_job(url, token, job_id)

    async def work(client: JobnikClient) -> bool:
        return await client.set_priority(job_id, level)

    changed = run(manager, work)
    _done(f"job {job_id} priority {level.value}" + ("" if changed else " (unchanged)"))
