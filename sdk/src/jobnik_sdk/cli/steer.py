"""Commands that change a job or a stage: approve, pause, resume, abort, priority."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import typer

from .._client import JobnikClient
from .._exceptions import ApiError
from .._models import JobStatus, Priority
from . import output
from ._run import USAGE, JobArg, Manager, Token, Url, chosen_job, fail, run


def _done(message: str) -> None:
    output.stdout().print(message, soft_wrap=True)


def _steer(manager: Manager, call: Callable[[JobnikClient], Awaitable[object]], said: str) -> None:
    """Make one call of the client; say `said` once it is done."""

    async def work(client: JobnikClient) -> None:
        await call(client)

    run(manager, work)
    _done(said)


def _steer_job(
    url: str | None,
    token: str | None,
    given: str,
    how: str,
    call: Callable[..., Any],
    already: Callable[[JobStatus], bool],
) -> None:
    """`call(client)(job_id)` on the job `given` names; say it was done `how`. A job the
    manager refuses because it is `already` so (a second pause) is left as it is, and
    said so: steering twice is not an error."""
    manager, job_id = chosen_job(url, token, given)

    async def work(client: JobnikClient) -> bool:
        try:
            await call(client)(job_id)
        except ApiError as exc:
            if exc.code != "ILLEGAL_JOB_STATUS_TRANSITION":
                raise
            if not already((await client.get_job(job_id)).status):
                raise
            return False
        return True

    changed = run(manager, work)
    _done(f"job {job_id} {how}" if changed else f"job {job_id} already {how} (unchanged)")


def _running(status: JobStatus) -> bool:
    """Not paused, and not final: what a resume leads to."""
    return status in (JobStatus.PENDING, JobStatus.IN_PROGRESS)


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
    _steer_job(url, token, job_id, "paused", lambda c: c.pause, lambda s: s is JobStatus.PAUSED)


def resume(job_id: JobArg, url: Url = None, token: Token = None) -> None:
    """Resume a paused job."""
    _steer_job(url, token, job_id, "resumed", lambda c: c.resume, _running)


def abort(job_id: JobArg, url: Url = None, token: Token = None) -> None:
    """Abort the job: its unfinished stages and tasks become ABORTED."""
    _steer_job(url, token, job_id, "aborted", lambda c: c.abort, lambda s: s is JobStatus.ABORTED)


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


def retry(job_id: JobArg, url: Url = None, token: Token = None) -> None:
    """Run a FAILED job's failed stage again; its failed and aborted tasks get a fresh set
    of attempts."""
    manager, job_id = chosen_job(url, token, job_id)

    async def work(client: JobnikClient) -> JobStatus:
        return (await client.retry_job(job_id)).status

    now = run(manager, work)
    _done(f"job {job_id} retried: {now.value}")


def delete(
    job_id: JobArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask first.")] = False,
    url: Url = None,
    token: Token = None,
) -> None:
    """Delete a final job (COMPLETED, FAILED or ABORTED) with its stages, tasks and history."""
    manager, job_id = chosen_job(url, token, job_id)
    if not yes:
        if not sys.stdin.isatty():
            fail(USAGE, "deleting cannot be undone: confirm with --yes")
        typer.confirm(f"Delete job {job_id}, its stages, tasks and history?", abort=True)

    async def work(client: JobnikClient) -> None:
        await client.delete_job(job_id)

    run(manager, work)
    _done(f"job {job_id} deleted")


def cancel(
    task_id: Annotated[str, typer.Argument(metavar="TASK", help="The task's id.")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why, on the task.")] = None,
    url: Url = None,
    token: Token = None,
) -> None:
    """Cancel one task that is not final (ABORTED, no attempt spent); a worker running it
    hears so at its next heartbeat."""
    _steer(
        Manager.chosen(url, token),
        lambda client: client.cancel_task(task_id, reason=reason),
        f"task {task_id} cancelled",
    )
