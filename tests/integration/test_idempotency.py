"""Idempotency-Key on the creating POSTs: a repeat answers the first answer again."""

from __future__ import annotations

import asyncio
import hashlib
import json

import httpx
from sqlalchemy import func, select, update

from jobnik_manager.api.schemas import JobCreate
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import IDEMPOTENCY_KEYS, Job, Task

from ..conftest import app_client
from ..support.api import Api, unique


async def count(db: Database, model: type[Job] | type[Task]) -> int:
    async with db.sessions() as s:
        return int((await s.execute(select(func.count()).select_from(model))).scalar_one())


async def test_a_repeated_job_creation_creates_one_job(api: Api, db: Database) -> None:
    body = {"name": unique("idem"), "data": {}, "stages": [{"type": "t", "data": {},
            "tasks": [{"data": {"i": 1}}]}]}  # fmt: skip
    headers = {"Idempotency-Key": "job-key-1"}
    first = await api.call("POST", "/v1/jobs", 201, json=body, headers=headers)
    again = await api.call("POST", "/v1/jobs", 201, json=body, headers=headers)
    assert again == first
    assert await count(db, Job) == 1 and await count(db, Task) == 1
    other = await api.call("POST", "/v1/jobs", 201, json=body, headers={"Idempotency-Key": "k2"})
    assert other["id"] != first["id"]


async def test_the_same_key_with_another_body_or_path_is_refused(api: Api, db: Database) -> None:
    job = await api.create_job()
    headers = {"Idempotency-Key": "stage-key"}
    stage = await api.call(
        "POST", f"/v1/jobs/{job['id']}/stage", 201, json={"type": "a", "data": {}}, headers=headers
    )
    again = await api.call(
        "POST", f"/v1/jobs/{job['id']}/stage", 201, json={"type": "a", "data": {}}, headers=headers
    )
    assert again == stage
    err = await api.call(
        "POST", f"/v1/jobs/{job['id']}/stage", 409, json={"type": "b", "data": {}}, headers=headers
    )
    assert err["code"] == "IDEMPOTENCY_KEY_REUSED" and err["message"]
    err = await api.call(
        "POST", f"/v1/stages/{stage['id']}/tasks", 409, json=[{"data": {}}], headers=headers
    )
    assert err["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert len(await api.call("GET", f"/v1/jobs/{job['id']}/stages")) == 1


async def test_repeated_task_creation_adds_the_tasks_once(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"])
    headers = {"Idempotency-Key": "tasks-1"}
    body = [{"data": {"i": i}} for i in range(3)]
    first = await api.call(
        "POST", f"/v1/stages/{stage['id']}/tasks", 201, json=body, headers=headers
    )
    again = await api.call(
        "POST", f"/v1/stages/{stage['id']}/tasks", 201, json=body, headers=headers
    )
    assert again == first and await count(db, Task) == 3
    assert (await api.stage(stage["id"]))["summary"]["total"] == 3


async def test_a_failed_request_does_not_use_up_its_key(api: Api) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    headers = {"Idempotency-Key": "retry-me"}
    body = {"type": "a", "data": {}}
    await api.call("POST", f"/v1/jobs/{missing}/stage", 404, json=body, headers=headers)
    job = await api.create_job()
    # Nothing was kept of the refused request, so the key is still free.
    stage = await api.call("POST", f"/v1/jobs/{job['id']}/stage", 201, json=body, headers=headers)
    again = await api.call("POST", f"/v1/jobs/{job['id']}/stage", 201, json=body, headers=headers)
    assert again == stage


async def test_bad_keys_are_refused(api: Api, db: Database) -> None:
    for key in ("", "x" * 256, "has space", "tab\tkey"):
        err = await api.call(
            "POST",
            "/v1/jobs",
            400,
            json={"name": "ab", "data": {}},
            headers={"Idempotency-Key": key},
        )
        assert err["code"] == "VALIDATION_ERROR"
    assert await count(db, Job) == 0


async def test_concurrent_first_uses_of_a_key_create_one_job(pg_db: Database) -> None:
    body = {"name": unique("race"), "data": {}}
    async with app_client(pg_db) as c:

        async def post() -> httpx.Response:
            return await c.post("/v1/jobs", json=body, headers={"Idempotency-Key": "race-key"})

        answers = await asyncio.gather(*(post() for _ in range(8)))
    assert {a.status_code for a in answers} == {201}
    assert len({a.json()["id"] for a in answers}) == 1
    assert await count(pg_db, Job) == 1


async def test_a_repeated_task_event_adds_one_entry(api: Api) -> None:
    # What lets a handler's task event be retried through a restart: sent again with its
    # key, it answers the first entry and adds none.
    kind = unique("idem-event")
    job = await api.create_job(stages=[{"type": kind, "data": {}, "tasks": [{"data": {}}]}])
    task = await api.dequeue(kind)
    assert task is not None
    body = {"name": "tile.rendered", "leaseId": task["leaseId"], "fields": {"zoom": 3}}
    headers = {"Idempotency-Key": "event-key-1"}
    path = f"/v1/tasks/{task['id']}/events"
    first = await api.call("POST", path, 201, json=body, headers=headers)
    again = await api.call("POST", path, 201, json=body, headers=headers)
    assert again == first
    other = await api.call("POST", path, 409, json={**body, "name": "x"}, headers=headers)
    assert other["code"] == "IDEMPOTENCY_KEY_REUSED"
    history = await api.call("GET", f"/v1/jobs/{job['id']}/events", params={"page_size": 100})
    assert [e["name"] for e in history["items"] if e.get("name")] == ["tile.rendered"]


async def test_a_key_stored_in_the_earlier_form_is_answered_for_its_request(
    api: Api, db: Database
) -> None:
    # Floats and non-ASCII text, which the two forms of a fingerprint's JSON write apart;
    # and an integer beyond 64 bits, which only the standard library's takes.
    for key, data in (("older-1", {"f": 1e-05, "s": "日本"}), ("older-2", {"big": 2**70})):
        body = {"name": unique("idem"), "data": data, "stages": []}
        first = await api.call("POST", "/v1/jobs", 201, json=body, headers={"Idempotency-Key": key})
        # As an earlier version stored it: the standard library's canonical JSON.
        payload = JobCreate.model_validate(body).model_dump(mode="json", by_alias=True)
        text = json.dumps(["POST", "/v1/jobs", payload], sort_keys=True, separators=(",", ":"))
        stored = update(IDEMPOTENCY_KEYS).where(IDEMPOTENCY_KEYS.c.key == key)
        older = stored.values(fingerprint=hashlib.sha256(text.encode()).hexdigest())
        assert (await db.transaction(lambda s, q=older: s.execute(q))).rowcount == 1
        again = await api.call("POST", "/v1/jobs", 201, json=body, headers={"Idempotency-Key": key})
        assert again == first
        other = body | {"data": {"other": True}}
        err = await api.call("POST", "/v1/jobs", 409, json=other, headers={"Idempotency-Key": key})
        assert err["code"] == "IDEMPOTENCY_KEY_REUSED"
