"""GET of one task, stage or job (the reads a v1 worker makes around each task) is a
key lookup answered without the model, by the fast lane and by the FastAPI route
alike. Its answers equal those of the model path that lists the same entity (a stage
among its job's stages, a job with its stages, a task among its stage's tasks), in
every state, and its errors are the routes' own."""

from __future__ import annotations

import httpx

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.invariants import assert_invariants

UNKNOWN = "6f1c2a4e-0000-4000-8000-00000000abcd"


async def same_as_model_path(http: httpx.AsyncClient, job_id: str) -> None:
    """Each of the job's stages and tasks, and the job, read one by one, equal what the
    model path answers for them."""
    with_stages = (
        await http.get(f"/v1/jobs/{job_id}", params={"should_return_stages": True})
    ).json()
    stages = with_stages.pop("stages")
    assert (await http.get(f"/v1/jobs/{job_id}")).json() == with_stages
    for stage in stages:
        got = await http.get(f"/v1/stages/{stage['id']}")
        assert got.status_code == 200 and got.headers["content-type"] == "application/json"
        assert got.json() == stage
        tasks = (await http.get(f"/v1/stages/{stage['id']}/tasks")).json()["items"]
        for task in tasks:
            assert (await http.get(f"/v1/tasks/{task['id']}")).json() == task


async def test_reads_by_key_answer_as_the_model_path_in_every_state(
    api: Api, client: httpx.AsyncClient, db: Database
) -> None:
    job = await api.create_job()
    first = await api.create_stage(job["id"], unique("reads"))
    await api.create_tasks(first["id"], 3, maxAttempts=1)
    await api.create_stage(job["id"], unique("reads-next"), waiting=True)
    await same_as_model_path(client, job["id"])  # nothing started

    running = await api.call(
        "PATCH", f"/v1/stages/{first['type']}/tasks/dequeue", params={"lease_seconds": 60}
    )
    await api.call(
        "POST",
        f"/v1/tasks/{running['id']}/heartbeat",
        json={"leaseId": running["leaseId"], "progress": 30, "message": "a third"},
    )
    done = await api.dequeue(first["type"])
    assert done is not None
    await api.report(done["id"], "COMPLETED")
    await same_as_model_path(client, job["id"])  # running, with progress reported

    await api.report(running["id"], "FAILED")  # its one attempt: the job fails
    await same_as_model_path(client, job["id"])
    failed = await api.job(job["id"])
    assert failed["status"] == "FAILED" and failed["reason"]
    await assert_invariants(db)


async def test_a_read_of_what_is_not_there_or_not_an_id_answers_as_the_routes_do(
    client: httpx.AsyncClient,
) -> None:
    for path, code in (
        ("/v1/tasks/", "TASK_NOT_FOUND"),
        ("/v1/stages/", "STAGE_NOT_FOUND"),
        ("/v1/jobs/", "JOB_NOT_FOUND"),
    ):
        missing = await client.get(path + UNKNOWN)
        assert missing.status_code == 404 and missing.json()["code"] == code
        bad = await client.get(path + "not-an-id")
        assert bad.status_code == 400 and set(bad.json()) >= {"message", "code"}
