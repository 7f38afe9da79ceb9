"""Commands that change a job or a stage: approve, pause, resume, abort, priority."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

import typer

from .._client import JobnikClient
from .._models import Priority
from . import output
from ._run import JobArg, Manager, Token, Url, run


def _done(message: str) -> None:
    output.stdout().print(message, soft_wrap=True)


def _steer(
    url: str | None, token: str | None, call: Callable[[JobnikClient], Awaitable[object]], said: str
) -> None:
    """Make one call of the client; say `said` once it is done."""

    async def work(client: JobnikClient) -> None:
        await call(client)

    run(Manager.chosen(url, token), work)
    _done(said)


def approve(
    stage_id: Annotated[str, typer.Argument(metavar="STAGE", help="The WAITING stage's id.")],
    url: Url = None,
    token: Token = None,
) -> None:
    """Let a WAITING stage run."""
    _steer(url, token, lambda client: client.approve_stage(stage_id), f"stage {stage_id} approved")


def pause(job_id: JobArg, url: Url = None, token: Token = None) -> None:
    """Stop handing out the job's tasks (running ones may still report)."""
    _steer(url, token, lambda client: client.pause(job_id), f"job {job_id} paused")


def resume(job_id: JobArg, url: Url = None, token: Token = None) -> None:
    """Resume a paused job."""
    _steer(url, token, lambda client: client.resume(job_id), f"job {job_id} resumed")


def abort(job_id: JobArg, url: Url = None, token: Token = None) -> None:
    """Abort the job: its unfinished stages and tasks become ABORTED."""
    _steer(url, token, lambda client: client.abort(job_id), f"job {job_id} aborted")


def priority(
    job_id: JobArg,
    level: Annotated[Priority, typer.Argument(metavar="LEVEL", help="The new priority.")],
    url: Url = None,
    token: Token = None,
) -> None:
    """Change the job's priority: VERY_HIGH, HIGH, MEDIUM, LOW or VERY_LOW."""

    async def work(client: JobnikClient) -> bool:
        return await client.set_priority(job_id, level)

    changed = run(Manager.chosen(url, token), work)
    _done(f"job {job_id} priority {level.value}" + ("" if changed else " (unchanged)"))
