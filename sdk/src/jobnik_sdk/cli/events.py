"""`jobnik events JOB [--follow]`: a job's event history, one line per event."""

from __future__ import annotations

import asyncio
import json as json_module
import sys
from typing import Annotated

import typer

from .._client import JobnikClient
from .._models import Event
from . import output
from ._run import OK, JobArg, Json, Token, Url, chosen_job, interval_option, run

_PAGE = 1000  # the manager's largest page of events


def line(event: Event) -> str:
    """time, entity, id, from -> to, and why (reason) and who (principal)."""
    parts = [output.when(event.time), f"{event.entity:<5}", str(event.entity_id)]
    if event.to_status is not None:
        parts.append(f"{event.from_status or '(new)'} -> {event.to_status}")
    else:  # an entry a task's worker added
        parts.append(f"[{event.level or 'info'}] {event.name or ''}".rstrip())
        if event.message:
            parts.append(event.message)
    if event.reason:
        parts.append(f"reason: {event.reason}")
    if event.principal:
        parts.append(f"by {event.principal}")
    return "  ".join(parts)


def events(
    job_id: JobArg,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", "-f", help="Keep printing new events until the job is final (or Ctrl+C)."
        ),
    ] = False,
    last: Annotated[
        int | None,
        typer.Option("--last", min=1, max=_PAGE, help="Only the latest N events (then follow)."),
    ] = None,
    interval: Annotated[float, interval_option("Seconds between polls with --follow.")] = 0.5,
    url: Url = None,
    token: Token = None,
    json: Json = False,
) -> None:
    """The job's event history, oldest first (--json: an array; with --follow, a line each;
    with --last N, only the latest N)."""
    manager, job_id = chosen_job(url, token, job_id)

    def emit(event: Event) -> None:
        text = json_module.dumps(output.as_json(event)) if json and follow else line(event)
        sys.stdout.write(text + "\n")
        sys.stdout.flush()  # one line as it happens, also into a pipe

    async def history(client: JobnikClient) -> list[Event]:
        await client.get_job(job_id)
        if last is not None:
            latest = await client.list_events(job_id, page_size=last, newest_first=True)
            return latest.items[::-1]
        return [event async for event in client.iter_events(job_id, page_size=_PAGE)]

    async def follow_job(client: JobnikClient) -> None:
        seen = 0  # events passed over or printed: the next one is at this offset
        if last is not None:
            seen = max(0, (await client.list_events(job_id, page_size=1)).total - last)
        last_id = -1
        while True:
            job = await client.get_job(job_id)
            while True:  # every event there is now
                page = await client.list_events(job_id, page=seen // _PAGE + 1, page_size=_PAGE)
                fresh = [e for e in page.items[seen % _PAGE :] if e.id > last_id]
                for event in fresh:
                    emit(event)
                    last_id = event.id
                seen += len(page.items[seen % _PAGE :])
                if seen >= page.total or not page.items:
                    break
            if job.status.is_final:  # read before the events: nothing comes after them
                return
            await asyncio.sleep(interval)

    if follow:
        run(manager, follow_job, interrupt_code=OK)
        return
    found = run(manager, history)
    if json:
        output.print_json(found)
        return
    for event in found:
        emit(event)
