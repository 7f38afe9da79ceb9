"""The event log: every transition of a job, its stages and tasks, oldest first."""

from __future__ import annotations

from typing import Any

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique


async def events(api: Api, job_id: str) -> list[dict[str, Any]]:
    page = await api.call("GET", f"/v1/jobs/{job_id}/events", params={"page_size": 1000})
    assert page["total"] == len(page["items"])
    return page["items"]  # type: ignore[no-any-return]


def moves(items: list[dict[str, Any]], entity: str) -> list[tuple[str | None, str]]:
    return [(e["fromStatus"], e["toStatus"]) for e in items if e["entity"] == entity]


async def test_a_job_run_is_logged_in_order(api: Api, db: Database) -> None:
    job = await api.create_job()
    s1 = await api.create_stage(job["id"], unique("one"))
    s2 = await api.create_stage(job["id"], unique("two"), waiting=True)
    t1 = (await api.create_tasks(s1["id"], maxAttempts=2))[0]
    await api.create_tasks(s2["id"])
    claimed = await api.call(
        "PATCH", f"/v1/stages/{s1['type']}/tasks/dequeue", params={"worker": "w-9"}
    )
    await api.call(
        "PUT",
        f"/v1/tasks/{t1['id']}/status",
        json={"status": "FAILED", "leaseId": claimed["leaseId"], "reason": "boom"},
    )
    await api.run_one(s1["type"])
    await api.approve(s2["id"])
    await api.run_one(s2["type"])

    log = await events(api, job["id"])
    assert [e["id"] for e in log] == sorted(e["id"] for e in log)
    assert moves(log, "JOB") == [(None, "PENDING"), ("PENDING", "IN_PROGRESS"),
                                 ("IN_PROGRESS", "COMPLETED")]  # fmt: skip
    first = [e for e in log if e.get("stageId") == s1["id"] and e["entity"] == "STAGE"]
    assert [(e["fromStatus"], e["toStatus"]) for e in first] == [
        (None, "PENDING"),
        ("PENDING", "IN_PROGRESS"),
        ("IN_PROGRESS", "COMPLETED"),
    ]
    second = [e for e in log if e.get("stageId") == s2["id"] and e["entity"] == "STAGE"]
    assert [(e["fromStatus"], e["toStatus"]) for e in second] == [
        (None, "WAITING"),
        ("WAITING", "PENDING"),
        ("PENDING", "IN_PROGRESS"),
        ("IN_PROGRESS", "COMPLETED"),
    ]
    task_log = [e for e in log if e.get("taskId") == t1["id"]]
    assert [(e["fromStatus"], e["toStatus"], e["attempt"]) for e in task_log] == [
        (None, "PENDING", 0),
        ("PENDING", "IN_PROGRESS", 0),
        ("IN_PROGRESS", "RETRIED", 1),
        ("RETRIED", "IN_PROGRESS", 1),
        ("IN_PROGRESS", "COMPLETED", 1),
    ]
    assert task_log[1]["worker"] == "w-9" and task_log[1]["leaseId"] == claimed["leaseId"]
    assert task_log[2]["reason"] == "boom" and task_log[2]["leaseId"] == claimed["leaseId"]
    assert task_log[3]["leaseId"] != claimed["leaseId"]
    assert task_log[4]["leaseId"] == task_log[3]["leaseId"]


async def test_abort_and_pause_are_logged(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("ab"))
    later = await api.create_stage(job["id"], unique("later"))
    await api.create_tasks(stage["id"], 2)
    running = await api.dequeue(stage["type"])
    assert running is not None
    await api.set_job_status(job["id"], "PAUSED")
    await api.set_job_status(job["id"], "PENDING")
    await api.set_job_status(job["id"], "ABORTED")
    log = await events(api, job["id"])
    assert moves(log, "JOB")[-3:] == [
        ("IN_PROGRESS", "PAUSED"),
        ("PAUSED", "IN_PROGRESS"),
        ("IN_PROGRESS", "ABORTED"),
    ]
    aborted = {(e["entityId"], e["fromStatus"]) for e in log if e["toStatus"] == "ABORTED"}
    assert (running["id"], "IN_PROGRESS") in aborted
    assert (stage["id"], "IN_PROGRESS") in aborted and (later["id"], "CREATED") in aborted
    task_aborts = [e for e in log if e["entity"] == "TASK" and e["toStatus"] == "ABORTED"]
    assert len(task_aborts) == 2 and all(e["reason"] == "job aborted" for e in task_aborts)


async def test_events_page_and_unknown_job(api: Api) -> None:
    job = await api.create_job()
    await api.create_tasks((await api.create_stage(job["id"]))["id"], 5)
    page = await api.call("GET", f"/v1/jobs/{job['id']}/events", params={"page": 2, "page_size": 3})
    assert page["total"] == 7 and len(page["items"]) == 3
    missing = "00000000-0000-4000-8000-000000000000"
    err = await api.call("GET", f"/v1/jobs/{missing}/events", 404)
    assert err["code"] == "JOB_NOT_FOUND"


async def test_newest_first_turns_the_history_and_the_jobs_list_around(api: Api) -> None:
    name = unique("newest")
    made = [await api.create_job(name=name) for _ in range(3)]
    await api.call("PUT", f"/v1/jobs/{made[0]['id']}/status", json={"status": "PAUSED"})

    oldest = await events(api, made[0]["id"])
    newest = await api.call(
        "GET",
        f"/v1/jobs/{made[0]['id']}/events",
        params={"page_size": 1, "newest_first": "true"},
    )
    assert newest["total"] == len(oldest) == 2
    assert newest["items"] == [oldest[-1]]  # the first page holds the last move

    async def listed(**params: str) -> list[str]:
        page = await api.call("GET", "/v1/jobs", params={"job_name": name, **params})
        return [job["id"] for job in page["items"]]

    ids = [job["id"] for job in made]
    assert await listed() == ids
    assert await listed(newest_first="true") == ids[::-1]
    assert await listed(newest_first="false") == ids
    refused = await api.http.get("/v1/jobs", params={"newest_first": "sideways"})
    assert refused.status_code == 400 and refused.json()["code"]


async def test_jobs_found_by_the_first_digits_of_their_ids(api: Api) -> None:
    made = [(await api.create_job())["id"] for _ in range(20)]
    target = made[7]

    async def found(prefix: str) -> list[str]:
        page = await api.call("GET", "/v1/jobs", params={"id_prefix": prefix, "page_size": 100})
        return [job["id"] for job in page["items"]]

    assert await found(target[:8]) == [target]
    assert await found(target[:8].upper()) == [target]
    assert await found(target) == [target]  # the whole id, dashes and all
    assert await found(target[:13].replace("-", "")) == [target]
    first = target[0]
    assert set(await found(first)) >= {m for m in made if m.startswith(first)}
    assert all(m.startswith(first) for m in await found(first))
    for bad in ("xyz", "-", "0" * 33, ""):
        refused = await api.http.get("/v1/jobs", params={"id_prefix": bad})
        assert refused.status_code == 400, (bad, refused.text)
        assert refused.json()["code"] == "VALIDATION_ERROR"


async def test_approving_a_stage_of_a_final_job_says_the_job_is_final(api: Api) -> None:
    job = await api.create_job()
    await api.create_stage(job["id"], unique("first"))
    waiting = await api.create_stage(job["id"], unique("second"), waiting=True)
    await api.set_job_status(job["id"], "ABORTED")
    refused = await api.approve(waiting["id"], expect=400)
    assert refused["code"] == "ILLEGAL_STAGE_STATUS_TRANSITION"
    assert refused["message"].endswith("the stage's job is ABORTED"), refused
