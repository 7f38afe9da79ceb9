"""The reads of a stage or a job by id that arrive together go as one lookup
(services/batching.py): each answers what it would have answered alone, a missing one
404 among found ones, and a read sees every change answered before it was asked."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from jobnik_manager.db import reads
from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.invariants import assert_invariants

MISSING = "6f1c2a4e-0000-4000-8000-00000000beef"


def _spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[list[uuid.UUID]]:
    """The ids of each lookup `reads.<name>` makes from here on."""
    lookups: list[list[uuid.UUID]] = []
    real = getattr(reads, name)

    async def spy(db: Database, ids: Sequence[uuid.UUID]) -> Any:
        lookups.append(list(ids))
        return await real(db, ids)

    monkeypatch.setattr(reads, name, spy)
    return lookups


async def _jobs(api: Api, count: int) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    made = []
    for i in range(count):
        job = await api.create_job()
        stages = [await api.create_stage(job["id"], unique("read")) for _ in range(i % 3)]
        for stage in stages:
            await api.create_tasks(stage["id"], 2)
        made.append((job, stages))
    return made


async def test_reads_together_answer_as_each_alone(
    db: Database, api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = await _jobs(api, 5)
    # Something moved: a stage's counters and a job's status are in the answers.
    dequeued = (await api.http.patch(f"/v1/stages/{made[1][1][0]['type']}/tasks/dequeue")).json()
    assert dequeued["status"] == "IN_PROGRESS"
    paths = [f"/v1/jobs/{job['id']}" for job, _ in made]
    paths += [f"/v1/stages/{stage['id']}" for _, stages in made for stage in stages]
    paths += [f"/v1/jobs/{MISSING}", f"/v1/stages/{MISSING}", paths[0], paths[-1]]
    alone = [(r.status_code, r.json()) for r in [await api.http.get(p) for p in paths]]

    stage_lookups, job_lookups = _spy(monkeypatch, "stages"), _spy(monkeypatch, "jobs_and_stages")
    together = await asyncio.gather(*(api.http.get(p) for p in paths))
    assert [(r.status_code, r.json()) for r in together] == alone
    assert [status for status, _ in alone].count(404) == 2
    # Each read was looked up once, and most with others.
    asked_stages = [p.rsplit("/", 1)[1] for p in paths if "/stages/" in p]
    asked_jobs = [p.rsplit("/", 1)[1] for p in paths if "/jobs/" in p]
    assert sorted(str(i) for ids in stage_lookups for i in ids) == sorted(asked_stages)
    assert sorted(str(i) for ids in job_lookups for i in ids) == sorted(asked_jobs)
    assert len(stage_lookups) < len(asked_stages) and len(job_lookups) < len(asked_jobs)
    await assert_invariants(db)


async def test_a_read_sees_what_was_answered_before_it(db: Database, api: Api) -> None:
    job, stage, [task] = await api.one_stage_job(unique("fresh"))
    stage_path, job_path = f"/v1/stages/{stage['id']}", f"/v1/jobs/{job['id']}"

    async def read_while_others_read(path: str) -> dict[str, Any]:
        # Others' reads of the same keys under way: this one may wait for their batch,
        # never be answered from it.
        others = [asyncio.ensure_future(api.http.get(path)) for _ in range(4)]
        mine = await api.http.get(path)
        await asyncio.gather(*others)
        return mine.json()  # type: ignore[no-any-return]

    claimed = (await api.http.patch(f"/v1/stages/{stage['type']}/tasks/dequeue")).json()
    assert claimed["id"] == task["id"]
    assert (await read_while_others_read(stage_path))["summary"]["inProgress"] == 1
    assert (await read_while_others_read(job_path))["status"] == "IN_PROGRESS"
    done = await api.http.put(f"/v1/tasks/{task['id']}/status", json={"status": "COMPLETED"})
    assert done.status_code == 200, done.text
    after = await read_while_others_read(stage_path)
    assert (after["status"], after["summary"]["completed"], after["percentage"]) == (
        "COMPLETED",
        1,
        100,
    )
    assert (await read_while_others_read(job_path))["status"] == "COMPLETED"
    await assert_invariants(db)
