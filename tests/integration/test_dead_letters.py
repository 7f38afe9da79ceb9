"""Dead letters through the HTTP API on both backends: the tasks that failed for good,
newest first, each with its job and its failed attempts' reasons; retried (their FAILED
jobs replayed) or discarded, by id or by stage type; bad selections answer 400 and
change nothing; deleting the job deletes its discards."""

from __future__ import annotations

from typing import Any

import pytest

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.invariants import assert_invariants


async def failed_job(api: Api, stage_type: str, *reasons: str) -> tuple[dict[str, Any], str]:
    """A job whose one task failed once per reason (attempts enough for all): its id and
    the task's."""
    job = await api.create_job()
    stage = await api.create_stage(job["id"], stage_type)
    (task,) = await api.create_tasks(stage["id"], maxAttempts=len(reasons))
    for reason in reasons:
        claimed = await claim_and_report(api, stage_type, "FAILED", reason=reason)
        assert claimed["id"] == task["id"]
    assert (await api.job(job["id"]))["status"] == "FAILED"
    return job, task["id"]


async def claim_and_report(api: Api, stage_type: str, status: str, **body: Any) -> dict[str, Any]:
    """Claim a task of the stage type and report it `status`; the task as claimed."""
    claimed = await api.dequeue(stage_type)
    assert claimed is not None
    report = {"status": status, "leaseId": claimed["leaseId"], **body}
    await api.call("PUT", f"/v1/tasks/{claimed['id']}/status", json=report)
    return claimed


async def letters(api: Api, **params: Any) -> dict[str, Any]:
    return await api.call("GET", "/v1/dead-letters", params=params)  # type: ignore[no-any-return]


async def test_failed_tasks_are_listed_newest_first_with_their_errors(
    api: Api, db: Database
) -> None:
    kind = unique("dlq")
    first_job, first = await failed_job(api, kind, "tile server 502", "tile server 503")
    second_job, second = await failed_job(api, kind, "disk full")
    listed = await letters(api, stage_type=kind)
    assert listed["total"] == 2
    newest, oldest = listed["items"]
    assert (newest["task"]["id"], oldest["task"]["id"]) == (second, first)
    assert (oldest["jobId"], oldest["jobName"], oldest["jobStatus"], oldest["stageType"]) == (
        first_job["id"],
        first_job["name"],
        "FAILED",
        kind,
    )
    assert [(e["status"], e["attempt"], e["reason"]) for e in oldest["errors"]] == [
        ("RETRIED", 1, "tile server 502"),
        ("FAILED", 2, "tile server 503"),
    ]
    assert (await letters(api, job_id=second_job["id"]))["total"] == 1
    assert (await letters(api, stage_type=unique("none")))["total"] == 0
    await assert_invariants(db)


async def test_retry_replays_the_jobs_and_empties_the_list(api: Api, db: Database) -> None:
    kind = unique("dlq-retry")
    jobs = [await failed_job(api, kind, "flaky") for _ in range(3)]
    picked = [jobs[0][1], jobs[1][1]]
    done = await api.call("POST", "/v1/dead-letters/retry", json={"taskIds": picked})
    assert sorted(done["jobs"]) == sorted([jobs[0][0]["id"], jobs[1][0]["id"]])
    assert sorted(done["tasks"]) == sorted(picked) and done["skipped"] == []
    assert (await api.job(jobs[0][0]["id"]))["status"] == "IN_PROGRESS"
    assert [item["task"]["id"] for item in (await letters(api, stage_type=kind))["items"]] == [
        jobs[2][1]
    ]
    # By stage type: the one left; the replayed tasks run again.
    by_type = await api.call("POST", "/v1/dead-letters/retry", json={"stageType": kind})
    assert by_type["jobs"] == [jobs[2][0]["id"]]
    assert (await letters(api, stage_type=kind))["total"] == 0
    for _ in range(3):
        claimed = await api.dequeue(kind)
        assert claimed is not None and claimed["attempts"] == 0
    await assert_invariants(db)


async def test_retry_skips_what_it_cannot_replay(api: Api) -> None:
    kind = unique("dlq-partial")
    job = await api.create_job()
    stage = await api.create_stage(job["id"], kind, allowedFailures=1)
    await api.create_tasks(stage["id"], 2)
    failing = await claim_and_report(api, kind, "FAILED")
    other = await claim_and_report(api, kind, "COMPLETED")
    assert (await api.job(job["id"]))["status"] == "COMPLETED"
    # A failure its stage allowed is a dead letter, but its job cannot be replayed.
    assert (await letters(api, stage_type=kind))["total"] == 1
    gone = "00000000-0000-4000-8000-000000000000"
    done = await api.call(
        "POST", "/v1/dead-letters/retry", json={"taskIds": [failing["id"], other["id"], gone]}
    )
    assert done["jobs"] == [] and done["tasks"] == []
    codes = {s["taskId"]: s["code"] for s in done["skipped"]}
    assert codes == {
        failing["id"]: "JOB_NOT_FAILED",
        other["id"]: "NOT_A_DEAD_LETTER",
        gone: "NOT_A_DEAD_LETTER",
    }
    assert (await api.job(job["id"]))["status"] == "COMPLETED"


async def test_discard_takes_them_off_the_list_until_the_job_goes(api: Api, db: Database) -> None:
    kind = unique("dlq-discard")
    (job, task), (_, kept) = [await failed_job(api, kind, "bad input") for _ in range(2)]
    done = await api.call("POST", "/v1/dead-letters/discard", json={"taskIds": [task]})
    assert (done["tasks"], done["skipped"]) == ([task], [])
    again = await api.call("POST", "/v1/dead-letters/discard", json={"taskIds": [task]})
    assert [s["code"] for s in again["skipped"]] == ["NOT_A_DEAD_LETTER"]
    assert [i["task"]["id"] for i in (await letters(api, stage_type=kind))["items"]] == [kept]
    # The task itself is as it was: FAILED, its job too.
    assert (await api.task(task))["status"] == "FAILED"
    await api.call("DELETE", f"/v1/jobs/{job['id']}")
    assert await db.transaction(_discards) == 0
    await assert_invariants(db)


async def _discards(s: Any) -> int:
    from sqlalchemy import func, select

    from jobnik_manager.db.models import DeadLetterDiscard

    return int(await s.scalar(select(func.count()).select_from(DeadLetterDiscard)) or 0)


BAD_SELECTIONS = [
    ("neither", {}),
    ("both", {"taskIds": ["00000000-0000-4000-8000-000000000000"], "stageType": "x"}),
    ("no ids", {"taskIds": []}),
    ("over 100 ids", {"taskIds": ["00000000-0000-4000-8000-000000000000"] * 101}),
    ("a bad id", {"taskIds": ["nope"]}),
    ("an empty type", {"stageType": ""}),
    ("a long type", {"stageType": "t" * 51}),
    ("unknown field", {"stageType": "x", "all": True}),
]


@pytest.mark.parametrize(("case", "body"), BAD_SELECTIONS, ids=[c for c, _ in BAD_SELECTIONS])
@pytest.mark.parametrize("verb", ["retry", "discard"])
async def test_a_bad_selection_is_refused_and_changes_nothing(
    api: Api, verb: str, case: str, body: dict[str, Any]
) -> None:
    kind = unique("dlq-bad")
    await failed_job(api, kind, "x")
    refused = await api.call("POST", f"/v1/dead-letters/{verb}", 400, json=body)
    assert refused["code"] == "VALIDATION_ERROR" and refused["message"]
    assert (await letters(api, stage_type=kind))["total"] == 1
