"""What a job produced, through the HTTP API on both backends: its tasks record assets
and set its result (only the lease holder while a task runs), the job answers its
result and lists its assets in order, paged; bad input answers 400 and records
nothing; deleting the job deletes its assets."""

from __future__ import annotations

from typing import Any

import pytest

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.invariants import assert_invariants

TILES = {"type": "tile-pyramid", "uri": "s3://tiles/run-7/", "sizeBytes": 7340032, "name": "z0-12"}
REPORT = {"type": "report", "uri": "/exports/run-7/summary.pdf"}


async def running_task(api: Api) -> tuple[dict[str, Any], dict[str, Any]]:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("render"))
    await api.create_tasks(stage["id"])
    claimed = await api.dequeue(stage["type"])
    assert claimed is not None
    return job, claimed


async def test_a_task_records_assets_and_its_jobs_result(api: Api, db: Database) -> None:
    job, task = await running_task(api)
    added = await api.call(
        "POST",
        f"/v1/tasks/{task['id']}/assets",
        201,
        json={"leaseId": task["leaseId"], "assets": [TILES, REPORT]},
    )
    assert [(a["type"], a["uri"], a.get("sizeBytes")) for a in added["items"]] == [
        ("tile-pyramid", "s3://tiles/run-7/", 7340032),
        ("report", "/exports/run-7/summary.pdf", None),
    ]
    assert {a["jobId"] for a in added["items"]} == {job["id"]}
    assert {a["taskId"] for a in added["items"]} == {task["id"]}

    answered = await api.call(
        "PUT",
        f"/v1/tasks/{task['id']}/job-result",
        json={"leaseId": task["leaseId"], "result": {"tiles": 5461, "zoom": [0, 12]}},
    )
    assert answered["id"] == job["id"]
    assert answered["result"] == {"tiles": 5461, "zoom": [0, 12]}
    await api.call(
        "PUT",
        f"/v1/tasks/{task['id']}/status",
        json={"status": "COMPLETED", "leaseId": task["leaseId"]},
    )
    done = await api.job(job["id"])
    assert (done["status"], done["result"]) == ("COMPLETED", {"tiles": 5461, "zoom": [0, 12]})
    # A finished task's job still takes an output, from anyone who may add to it.
    await api.call("POST", f"/v1/tasks/{task['id']}/assets", 201, json={"assets": [REPORT]})

    listed = await api.call("GET", f"/v1/jobs/{job['id']}/assets")
    assert listed["total"] == 3
    assert [a["type"] for a in listed["items"]] == ["tile-pyramid", "report", "report"]
    second = await api.call(
        "GET", f"/v1/jobs/{job['id']}/assets", params={"page": 2, "page_size": 2}
    )
    assert (second["total"], [a["type"] for a in second["items"]]) == (3, ["report"])
    await assert_invariants(db)

    await api.call("DELETE", f"/v1/jobs/{job['id']}")
    gone = await api.call("GET", f"/v1/jobs/{job['id']}/assets", 404)
    assert gone["code"] == "JOB_NOT_FOUND"
    assert await db.transaction(_count_assets) == 0


async def _count_assets(s: Any) -> int:
    from sqlalchemy import func, select

    from jobnik_manager.db.models import JobAsset

    return int(await s.scalar(select(func.count()).select_from(JobAsset)) or 0)


async def test_a_job_without_outputs_answers_none(api: Api) -> None:
    job = await api.create_job()
    assert "result" not in await api.job(job["id"])
    assert await api.call("GET", f"/v1/jobs/{job['id']}/assets") == {"total": 0, "items": []}


async def test_only_the_lease_holder_adds_to_a_running_task(api: Api, db: Database) -> None:
    job, task = await running_task(api)
    url = f"/v1/tasks/{task['id']}"
    without = await api.call("POST", f"{url}/assets", 400, json={"assets": [REPORT]})
    assert without["code"] == "VALIDATION_ERROR" and "leaseId" in without["message"]
    stale = "00000000-0000-4000-8000-000000000000"
    lost = await api.call("PUT", f"{url}/job-result", 409, json={"leaseId": stale, "result": {}})
    assert lost["code"] == "LEASE_LOST"
    assert "result" not in await api.job(job["id"])
    assert (await api.call("GET", f"/v1/jobs/{job['id']}/assets"))["total"] == 0
    await api.call(
        "POST",
        "/v1/tasks/00000000-0000-4000-8000-000000000001/assets",
        404,
        json={"assets": [REPORT]},
    )


BAD_ASSETS = [
    ("no assets", {"assets": []}),
    ("not a list", {"assets": REPORT}),
    ("over 100", {"assets": [REPORT] * 101}),
    ("no uri", {"assets": [{"type": "report"}]}),
    ("empty type", {"assets": [{"type": "", "uri": "/x"}]}),
    ("long type", {"assets": [{"type": "t" * 51, "uri": "/x"}]}),
    ("long uri", {"assets": [{"type": "report", "uri": "/" * 2001}]}),
    ("negative size", {"assets": [{**REPORT, "sizeBytes": -1}]}),
    ("size as text", {"assets": [{**REPORT, "sizeBytes": "12"}]}),
    ("size too big", {"assets": [{**REPORT, "sizeBytes": 2**63}]}),
    ("unknown field", {"assets": [{**REPORT, "checksum": "abc"}]}),
    ("a NUL", {"assets": [{"type": "report", "uri": "/x\u0000"}]}),
    ("bad lease", {"assets": [REPORT], "leaseId": "nope"}),
]


@pytest.mark.parametrize(("case", "body"), BAD_ASSETS, ids=[c for c, _ in BAD_ASSETS])
async def test_bad_assets_are_refused_and_record_nothing(
    api: Api, case: str, body: dict[str, Any]
) -> None:
    job, task = await running_task(api)
    refused = await api.call("POST", f"/v1/tasks/{task['id']}/assets", 400, json=body)
    assert refused["code"] == "VALIDATION_ERROR" and refused["message"]
    assert (await api.call("GET", f"/v1/jobs/{job['id']}/assets"))["total"] == 0


@pytest.mark.parametrize(
    "body",
    [{}, {"result": [1, 2]}, {"result": "done"}, {"result": None}, {"result": {}, "extra": 1}],
    ids=["none", "a list", "text", "null", "unknown field"],
)
async def test_a_bad_result_is_refused_and_sets_nothing(api: Api, body: dict[str, Any]) -> None:
    job, task = await running_task(api)
    refused = await api.call(
        "PUT", f"/v1/tasks/{task['id']}/job-result", 400, json={"leaseId": task["leaseId"], **body}
    )
    assert refused["code"] == "VALIDATION_ERROR"
    assert "result" not in await api.job(job["id"])
