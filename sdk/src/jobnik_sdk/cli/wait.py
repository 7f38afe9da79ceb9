"""`jobnik wait JOB`: a progress bar until the job is final; the exit code says how it
ended."""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from .._client import JobnikClient
from .._models import Job, JobStatus
from . import output
from ._run import (
    JOB_FAILED,
    OK,
    JobArg,
    Json,
    Token,
    Url,
    chosen_job,
    interval_option,
    run,
)


def wait(
    job_id: JobArg,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", min=0, help="Give up (exit 6) after this many seconds."),
    ] = None,
    interval: Annotated[float, interval_option("Seconds between polls.")] = 1.0,
    url: Url = None,
    token: Token = None,
    json: Json = False,
) -> None:
    """Wait for the job to end: exit 0 COMPLETED, 1 FAILED or ABORTED, 6 timed out."""
    manager, job_id = chosen_job(url, token, job_id)
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=output.stderr(),
    )
    bar = progress.add_task(f"job {job_id}", total=100)

    def show(job: Job) -> None:
        done = job.progress if job.progress is not None else job.percentage
        progress.update(bar, completed=done, description=f"{job.status.value:<11}")

    async def work(client: JobnikClient) -> Job:
        with progress:
            return await client.wait(
                job_id,
                poll_interval=timedelta(seconds=interval),
                timeout=None if timeout is None else timedelta(seconds=timeout),
                on_progress=show,
            )

    job = run(manager, work)
    if json:
        output.print_json(job)
    else:
        sys.stdout.write(f"{job.id} {job.status.value}\n")
    if job.reason and job.status is not JobStatus.COMPLETED:
        output.error(f"job {job.status.value}: {job.reason}")
    raise typer.Exit(OK if job.status is JobStatus.COMPLETED else JOB_FAILED)
