"""The Open Job Spec's HTTP binding, level 0 (core), on both backends: the manifest and
health, PUSH, INFO, CANCEL, FETCH, ACK and NACK as the spec words them (its envelope,
states, headers and error objects), bad input refused with the spec's error and nothing
stored, and an OJS job run by the same rules as the same work made over /v1: the same
rows in the event log. Written from the spec (docs/ojs.md maps each requirement here)."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from jobnik_manager.api.routes.schedules import job_of
from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, Task
from jobnik_manager.maintenance.expiry import expire as expire_due
from jobnik_manager.maintenance.reaper import reap_expired
from jobnik_manager.services.claimability import open_due_retries
from jobnik_manager.services.schedules import fire_due

from ..support.api import Api, unique

MEDIA = "application/openjobspec+json"
UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 5, 1, 9, 0, tzinfo=UTC))


async def call(
    client: httpx.AsyncClient, method: str, path: str, body: Any = None, expect: int = 200
) -> Any:
    answer = await client.request(
        method,
        f"/ojs{path}",
        json=body,
        headers={"content-type": MEDIA} if body is not None else {},
    )
    assert answer.status_code == expect, (method, path, answer.status_code, answer.text)
    assert answer.headers["content-type"] == MEDIA
    assert answer.headers["ojs-version"] == "1.0"
    assert answer.headers["x-request-id"]
    return answer.json()


async def push(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    made = await call(client, "POST", "/v1/jobs", {"type": "email.send", "args": [], **body}, 201)
    job: dict[str, Any] = made["job"]
    return job


async def one_task_v1_job(api: Api, name: str, stage_type: str, *, attempts: int) -> Any:
    """The same work as an OJS job, made over v1: a job of one stage of one task."""
    task = {"data": {}, "maxAttempts": attempts}
    body = {"name": name, "data": {}, "stages": [{"type": stage_type, "data": {}, "tasks": [task]}]}
    return await api.call("POST", "/v1/jobs", 201, json=body)


def refused(answer: Any, code: str) -> None:
    """The spec's error object, and nothing of /v1's shape."""
    assert set(answer) == {"error"}, answer
    error = answer["error"]
    assert error["code"] == code, error
    assert error["message"] and error["retryable"] is False
    assert isinstance(error["hint"], str) and error["docs_url"].endswith(code)
    assert error["request_id"].startswith("req_")


async def test_the_manifest_declares_level_4_over_http_and_health_is_ok(
    client: httpx.AsyncClient,
) -> None:
    manifest = await call(client, "GET", "/manifest")
    assert (manifest["specversion"], manifest["conformance_level"]) == ("1.0", 4)
    assert manifest["protocols"] == ["http"] and manifest["implementation"]["name"] == "jobnik"
    assert manifest["endpoints"]["health"] == "/ojs/v1/health"
    # What it has, beyond the level it declares; schema validation it has not.
    capabilities = manifest["capabilities"]
    assert {name for name, has in capabilities.items() if not has} == {"schema_validation"}
    health = await call(client, "GET", "/v1/health")
    assert health["status"] == "ok" and health["backend"]["status"] == "connected"


async def test_push_answers_the_envelope_with_its_location(client: httpx.AsyncClient) -> None:
    answer = await client.post(
        "/ojs/v1/jobs",
        json={
            "type": "email.send",
            "args": ["a@example.com", {"n": [1, 2.5, None]}],
            "meta": {"trace_id": "t-1", "tags": ["x"]},
            "x_custom_field": {"kept": True},
            "state": "completed",  # the server's to set: ignored
        },
        headers={"content-type": MEDIA, "x-request-id": "mine-1"},
    )
    assert answer.status_code == 201, answer.text
    assert answer.headers["x-request-id"] == "mine-1"
    job = answer.json()["job"]
    assert answer.headers["location"] == f"/ojs/v1/jobs/{job['id']}"
    assert UUID7.fullmatch(job["id"])
    assert (job["type"], job["queue"], job["state"], job["attempt"]) == (
        "email.send",
        "default",
        "available",
        0,
    )
    assert job["args"] == ["a@example.com", {"n": [1, 2.5, None]}]
    assert job["meta"] == {"trace_id": "t-1", "tags": ["x"]}
    assert job["x_custom_field"] == {"kept": True} and job["max_attempts"] == 3
    assert TIME.fullmatch(job["created_at"]) and TIME.fullmatch(job["enqueued_at"])
    assert not {"started_at", "completed_at", "error", "result"} & set(job)
    assert await call(client, "GET", f"/v1/jobs/{job['id']}") == {"job": job}


async def test_a_client_id_is_kept_and_a_second_push_of_it_is_a_duplicate(
    client: httpx.AsyncClient, db: Database
) -> None:
    mine = "0190b6e4-8f2a-7c3d-9e4f-0123456789ab"
    assert (await push(client, id=mine))["id"] == mine
    again = await call(client, "POST", "/v1/jobs", {"type": "a", "args": [], "id": mine}, 409)
    refused(again, "duplicate")
    assert await count(db, Task) == 1


async def count(db: Database, model: Any) -> int:
    return int(await db.transaction(lambda s: s.scalar(select(func.count()).select_from(model))))


BAD_PUSHES = [
    ({"args": []}, "no type"),
    ({"type": "Email.Send", "args": []}, "uppercase type"),
    ({"type": "email send", "args": []}, "type with a space"),
    ({"type": "1email", "args": []}, "type starting with a digit"),
    ({"type": "", "args": []}, "empty type"),
    ({"type": "a"}, "no args"),
    ({"type": "a", "args": {"k": 1}}, "args an object"),
    ({"type": "a", "args": "x"}, "args a string"),
    ({"type": "a", "args": None}, "args null"),
    ({"type": "a", "args": [], "options": {"queue": "Default"}}, "uppercase queue"),
    ({"type": "a", "args": [], "options": {"queue": "-q"}}, "queue starting with a hyphen"),
    ({"type": "a", "args": [], "options": {"priority": 101}}, "priority over 100"),
    ({"type": "a", "args": [], "options": {"priority": 1.5}}, "priority not an integer"),
    ({"type": "a", "args": [], "id": str(uuid.uuid4())}, "a version 4 id"),
    ({"type": "a", "args": [], "id": "0190B6E4-8F2A-7C3D-9E4F-0123456789AB"}, "uppercase id"),
    ({"type": "a", "args": [], "meta": []}, "meta an array"),
    ({"type": "a", "args": [], "options": {"delay_until": "tomorrow"}}, "a time that is not"),
    ({"type": "a", "args": [], "options": {"delay_until": "2099-01-01T00:00:00"}}, "no zone"),
]


@pytest.mark.parametrize(("body", "why"), BAD_PUSHES, ids=[why for _, why in BAD_PUSHES])
async def test_a_bad_push_is_refused_with_the_specs_error_and_stores_nothing(
    client: httpx.AsyncClient, db: Database, body: dict[str, Any], why: str
) -> None:
    refused(await call(client, "POST", "/v1/jobs", body, 400), "invalid_request")
    assert await count(db, Task) == 0


async def test_a_body_that_is_no_json_object_is_an_invalid_payload(
    client: httpx.AsyncClient, db: Database
) -> None:
    for raw in (b"", b"{not json", b"[1, 2]"):
        answer = await client.post("/ojs/v1/jobs", content=raw, headers={"content-type": MEDIA})
        assert answer.status_code == 400, answer.text
        assert answer.headers["content-type"] == MEDIA
        refused(answer.json(), "invalid_payload")
    bad_policy = {"type": "a", "args": [], "options": {"retry": {"max_attempts": -1}}}
    answer = await call(client, "POST", "/v1/jobs", bad_policy, 422)
    assert answer["error"]["type"] == "validation_error"
    assert "max_attempts" in answer["error"]["message"]
    assert await count(db, Task) == 0


async def test_unknown_jobs_and_paths_answer_in_the_specs_shape_and_v1_keeps_its_own(
    client: httpx.AsyncClient,
) -> None:
    for path in (f"/v1/jobs/{uuid.uuid4()}", "/v1/jobs/not-an-id", "/v1/nothing-here"):
        refused(await call(client, "GET", path, expect=404), "not_found")
    refused(await call(client, "DELETE", f"/v1/jobs/{uuid.uuid4()}", expect=404), "not_found")
    v1 = await client.get(f"/v1/jobs/{uuid.uuid4()}")
    assert v1.status_code == 404 and set(v1.json()) == {"message", "code"}
    assert "ojs-version" not in v1.headers


async def test_a_job_is_fetched_acked_and_read_back_completed(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    queue = unique("q").lower()
    job = await push(client, meta={"k": "v"}, options={"queue": queue})
    assert await call(client, "POST", "/v1/workers/fetch", {"queues": ["other-queue"]}) == {
        "jobs": []
    }
    fetched = await call(
        client, "POST", "/v1/workers/fetch", {"queues": [queue], "worker_id": "w-1"}
    )
    [active] = fetched["jobs"]
    assert (active["id"], active["state"], active["attempt"]) == (job["id"], "active", 1)
    assert TIME.fullmatch(active["started_at"]) and active["meta"] == {"k": "v"}
    assert (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]["state"] == "active"

    clock.advance(2)
    # Another worker, naming itself, may not settle what w-1 holds.
    theirs = {"job_id": job["id"], "worker_id": "w-2"}
    refused(await call(client, "POST", "/v1/workers/ack", theirs, 409), "conflict")
    acked = await call(
        client, "POST", "/v1/workers/ack", {"job_id": job["id"], "result": {"sent": 1}}
    )
    assert acked["acknowledged"] is True and (acked["id"], acked["state"]) == (
        job["id"],
        "completed",
    )
    done = (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]
    assert (done["state"], done["attempt"], done["result"]) == ("completed", 1, {"sent": 1})
    assert done["completed_at"] > done["started_at"] and "error" not in done
    # Finished: acking, nacking or cancelling it again is a conflict, and changes nothing.
    again = await call(client, "POST", "/v1/workers/ack", {"job_id": job["id"]}, 409)
    refused(again, "conflict")
    nack = {"job_id": job["id"], "error": {"message": "late"}}
    refused(await call(client, "POST", "/v1/workers/nack", nack, 409), "conflict")
    refused(await call(client, "DELETE", f"/v1/jobs/{job['id']}", expect=409), "conflict")
    assert (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"] == done


async def test_a_nack_retries_while_attempts_last_then_discards(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    queue = unique("q").lower()
    job = await push(client, options={"queue": queue, "retry": {"max_attempts": 2}})
    error = {"code": "smtp_down", "message": "the mail server is away", "retryable": True}
    for attempt, state in ((1, "retryable"), (2, "discarded")):
        [active] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
        assert active["attempt"] == attempt
        said = await call(client, "POST", "/v1/workers/nack", {"job_id": job["id"], "error": error})
        assert (said["id"], said["state"], said["attempt"], said["max_attempts"]) == (
            job["id"],
            state,
            attempt,
            2,
        )
        read = (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]
        assert read["state"] == state
        assert read["error"] == {
            "type": "smtp_down",
            "code": "smtp_down",
            "message": "the mail server is away",
        }
        if state == "retryable":
            assert "completed_at" not in read and TIME.fullmatch(said["next_attempt_at"])
            clock.advance(timedelta(milliseconds=said["retry_delay_ms"] + 1))
    assert TIME.fullmatch(said["discarded_at"]) and said["completed_at"] == said["discarded_at"]


async def test_a_non_retryable_error_discards_at_once(client: httpx.AsyncClient) -> None:
    queue = unique("q").lower()
    job = await push(client, options={"queue": queue})
    await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]})
    error = {"code": "bad_address", "message": "no such mailbox", "retryable": False}
    said = await call(client, "POST", "/v1/workers/nack", {"job_id": job["id"], "error": error})
    assert (said["state"], said["attempt"]) == ("discarded", 1)


async def test_cancel_an_available_and_an_active_job(client: httpx.AsyncClient) -> None:
    queue = unique("q").lower()
    waiting = await push(client, options={"queue": queue})
    cancelled = (await call(client, "DELETE", f"/v1/jobs/{waiting['id']}"))["job"]
    assert (cancelled["state"], cancelled["previous_state"]) == ("cancelled", "available")
    assert TIME.fullmatch(cancelled["cancelled_at"]) and "completed_at" not in cancelled
    running = await push(client, options={"queue": queue})
    await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]})
    stopped = (await call(client, "DELETE", f"/v1/jobs/{running['id']}"))["job"]
    assert (stopped["state"], stopped["attempt"]) == ("cancelled", 1) and stopped["started_at"]
    ack = await call(client, "POST", "/v1/workers/ack", {"job_id": running["id"]}, 409)
    refused(ack, "conflict")


async def test_fetch_takes_queues_in_order_then_priority_then_age(
    client: httpx.AsyncClient,
) -> None:
    high, low = unique("high").lower(), unique("low").lower()
    in_low = await push(client, options={"queue": low})
    first = await push(client, options={"queue": high})
    second = await push(client, options={"queue": high})
    urgent = await push(client, options={"queue": high, "priority": 60})
    fetched = await call(client, "POST", "/v1/workers/fetch", {"queues": [high, low], "count": 4})
    order = [j["id"] for j in fetched["jobs"]]
    assert order == [urgent["id"], first["id"], second["id"], in_low["id"]]


@pytest.mark.parametrize("where", ["options.delay_until", "scheduled_at"])
async def test_a_delayed_job_is_scheduled_until_its_time(
    client: httpx.AsyncClient, clock: ManualClock, where: str
) -> None:
    queue = unique("q").lower()
    at = (clock.now() + timedelta(minutes=5)).isoformat()
    if where == "scheduled_at":  # the job's own attribute (ojs-core)
        job = await push(client, options={"queue": queue}, scheduled_at=at)
    else:  # the binding's option
        job = await push(client, options={"queue": queue, "delay_until": at})
    assert job["state"] == "scheduled" and TIME.fullmatch(job["scheduled_at"])
    assert (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"] == []
    clock.advance(timedelta(minutes=5, seconds=1))
    read = (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]
    assert read["state"] == "available"
    [fetched] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
    assert fetched["id"] == job["id"]


async def test_an_ojs_job_and_the_same_work_over_v1_leave_the_same_event_log(
    client: httpx.AsyncClient, api: Api, db: Database, clock: ManualClock
) -> None:
    """Pushed, fetched, failed (retried), fetched again and completed: over OJS, and as a
    v1 job of one stage of one task (3 attempts, as OJS's default) run by its worker."""
    queue = unique("same").lower()
    job = await push(client, options={"queue": queue})
    await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]})
    nack = {"job_id": job["id"], "error": {"message": "flaky"}}
    delay = (await call(client, "POST", "/v1/workers/nack", nack))["retry_delay_ms"]
    clock.advance(timedelta(milliseconds=delay + 1))
    await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]})
    await call(client, "POST", "/v1/workers/ack", {"job_id": job["id"]})

    other = unique("same").lower()
    made = await one_task_v1_job(api, "email.send", other, attempts=3)
    task = await api.dequeue(other)
    assert task is not None
    failed = await api.call(
        "PUT", f"/v1/tasks/{task['id']}/status", json={"status": "FAILED", "reason": "flaky"}
    )
    assert failed["status"] == "RETRIED"
    clock.advance(timedelta(milliseconds=delay + 1))
    assert await api.dequeue(other) is not None
    await api.report(task["id"], "COMPLETED")

    async def moves(job_id: str) -> list[tuple[Any, ...]]:
        rows = await db.transaction(
            lambda s: s.execute(
                select(Event.entity, Event.from_status, Event.to_status, Event.attempt)
                .where(Event.job_id == uuid.UUID(job_id))
                .order_by(Event.seq)
            )
        )
        return [tuple(r) for r in rows]

    task_of_ojs = (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]
    stage_of_ojs = (await api.task(task_of_ojs["id"]))["stageId"]
    v1_job = (await api.stage(stage_of_ojs))["jobId"]
    ojs_moves, v1_moves = await moves(v1_job), await moves(made["id"])
    assert ojs_moves == v1_moves
    assert ("TASK", "IN_PROGRESS", "RETRIED", 1) in ojs_moves
    assert ojs_moves[-1] == ("JOB", "IN_PROGRESS", "COMPLETED", None)


async def test_a_heartbeat_keeps_a_job_past_its_visibility_timeout(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    queue = unique("q").lower()
    job = await push(client, options={"queue": queue})
    fetch = {"queues": [queue], "worker_id": "w-1", "visibility_timeout_ms": 3000}
    await call(client, "POST", "/v1/workers/fetch", fetch)
    for _ in range(3):  # 6 s in all: twice the visibility timeout
        clock.advance(2)
        beat = {"worker_id": "w-1", "active_jobs": [job["id"], str(uuid.uuid4())]}
        said = await call(client, "POST", "/v1/workers/heartbeat", beat)
        assert (said["state"], said["jobs_extended"]) == ("running", [job["id"]])
        assert TIME.fullmatch(said["server_time"])
    # Another worker's beat extends nothing of this one's.
    other = await call(
        client, "POST", "/v1/workers/heartbeat", {"worker_id": "w-2", "active_jobs": [job["id"]]}
    )
    assert other["jobs_extended"] == []
    assert (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]["state"] == "active"
    refused(await call(client, "POST", "/v1/workers/heartbeat", {}, 400), "invalid_request")


async def test_a_discarded_job_is_a_dead_letter_retried_or_deleted(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    queue = unique("dlq").lower()
    jobs = [
        await push(client, options={"queue": queue, "retry": {"max_attempts": 1}}) for _ in "ab"
    ]
    for job, message in zip(jobs, ("first", "second"), strict=True):
        await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]})
        nack = {"job_id": job["id"], "error": {"code": "boom", "message": message}}
        assert (await call(client, "POST", "/v1/workers/nack", nack))["state"] == "discarded"
        clock.advance(1)
    listed = await call(client, "GET", f"/v1/dead-letter?queue={queue}")
    assert [j["id"] for j in listed["jobs"]] == [jobs[1]["id"], jobs[0]["id"]]
    assert listed["pagination"] == {"total": 2, "has_more": False}
    [entry] = listed["jobs"][1]["errors"]
    assert (entry["code"], entry["message"], entry["attempt"]) == ("boom", "first", 1)
    assert TIME.fullmatch(entry["occurred_at"])
    read = (await call(client, "GET", f"/v1/jobs/{jobs[0]['id']}"))["job"]
    assert read["errors"] == [entry] and read["state"] == "discarded"

    retried = (await call(client, "POST", f"/v1/dead-letter/{jobs[0]['id']}/retry", {}))["job"]
    assert (retried["state"], retried["attempt"]) == ("available", 0)
    [again] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
    assert (again["id"], again["attempt"]) == (jobs[0]["id"], 1)
    deleted = await call(client, "DELETE", f"/v1/dead-letter/{jobs[1]['id']}")
    assert deleted == {"deleted": True, "job_id": jobs[1]["id"]}
    assert (await call(client, "GET", f"/v1/dead-letter?queue={queue}"))["jobs"] == []
    gone = await call(client, "DELETE", f"/v1/dead-letter/{jobs[1]['id']}", expect=404)
    refused(gone, "not_found")


async def test_the_queues_are_listed_and_a_purge_empties_one_alone(
    client: httpx.AsyncClient, api: Api, db: Database
) -> None:
    purged, kept = unique("purged").lower(), unique("kept").lower()
    for queue in (purged, purged, kept):
        await push(client, options={"queue": queue})
    running = await push(client, options={"queue": purged})
    await call(client, "POST", "/v1/workers/fetch", {"queues": [purged]})
    names = {q["name"]: q["status"] for q in (await call(client, "GET", "/v1/queues"))["queues"]}
    assert names[purged] == names[kept] == "active"
    # A v1 job with a stage of the type and one of another is not the queue's to purge.
    mixed = await api.create_job()
    await api.create_stage(mixed["id"], purged)
    await api.create_stage(mixed["id"], kept)
    unconfirmed = await call(client, "DELETE", f"/v1/admin/queues/{purged}/jobs", {}, 400)
    refused(unconfirmed, "invalid_request")
    said = await call(client, "DELETE", f"/v1/admin/queues/{purged}/jobs", {"confirm": True})
    assert said["purged_count"] == 3
    refused(await call(client, "GET", f"/v1/jobs/{running['id']}", expect=404), "not_found")
    assert (await call(client, "POST", "/v1/workers/fetch", {"queues": [purged]}))["jobs"] == []
    assert (await api.job(mixed["id"]))["id"] == mixed["id"]
    [left] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [kept]}))["jobs"]
    assert left["queue"] == kept


async def test_a_purge_of_some_states_deletes_only_the_jobs_in_them(
    client: httpx.AsyncClient, api: Api
) -> None:
    queue = unique("states").lower()
    done, running, waiting = [await push(client, options={"queue": queue}) for _ in range(3)]
    fetched = await call(client, "POST", "/v1/workers/fetch", {"queues": [queue], "count": 2})
    assert [j["id"] for j in fetched["jobs"]] == [done["id"], running["id"]]
    await call(client, "POST", "/v1/workers/ack", {"job_id": done["id"]})
    body = {"confirm": True, "states": ["completed"]}
    said = await call(client, "DELETE", f"/v1/admin/queues/{queue}/jobs", body)
    assert said["purged_count"] == 1
    refused(await call(client, "GET", f"/v1/jobs/{done['id']}", expect=404), "not_found")
    body = {"confirm": True, "states": ["available", "completed"]}
    said = await call(client, "DELETE", f"/v1/admin/queues/{queue}/jobs", body)
    assert said["purged_count"] == 1
    refused(await call(client, "GET", f"/v1/jobs/{waiting['id']}", expect=404), "not_found")
    assert (await call(client, "GET", f"/v1/jobs/{running['id']}"))["job"]["state"] == "active"


async def test_a_batch_push_makes_every_job_or_none(
    client: httpx.AsyncClient, db: Database
) -> None:
    queue = unique("bulk").lower()
    jobs = [{"type": "tile.render", "args": [i], "options": {"queue": queue}} for i in range(50)]
    made = await call(client, "POST", "/v1/jobs/batch", {"jobs": jobs}, 201)
    assert made["count"] == 50 and [j["args"] for j in made["jobs"]] == [[i] for i in range(50)]
    assert len({j["id"] for j in made["jobs"]}) == 50
    fetched = await call(client, "POST", "/v1/workers/fetch", {"queues": [queue], "count": 100})
    assert [j["args"] for j in fetched["jobs"]] == [[i] for i in range(50)]  # in push order
    # One bad job refuses them all, naming it; an id twice is a duplicate.
    bad = [*jobs[:3], {"type": "Bad", "args": []}]
    answer = await call(client, "POST", "/v1/jobs/batch", {"jobs": bad}, 400)
    refused(answer, "invalid_request")
    assert answer["error"]["message"].startswith("jobs[3]: type")
    twice = {"type": "a", "args": [], "id": "0190b6e4-8f2a-7c3d-9e4f-0123456789ab"}
    refused(
        await call(client, "POST", "/v1/jobs/batch", {"jobs": [twice, twice]}, 409), "duplicate"
    )
    for body in ({"jobs": []}, {"jobs": [{}] * 1001}, {"jobs": "x"}, {}):
        refused(await call(client, "POST", "/v1/jobs/batch", body, 400), "invalid_request")
    assert await count(db, Task) == 50


async def test_the_events_of_a_queue_are_polled_oldest_first_with_a_cursor(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    queue, other = unique("evt").lower(), unique("quiet").lower()
    job = await push(client, type="report.build", options={"queue": queue})
    await push(client, options={"queue": other})
    await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]})
    clock.advance(timedelta(milliseconds=1500))
    await call(client, "POST", "/v1/workers/ack", {"job_id": job["id"]})
    polled = await call(client, "GET", f"/v1/events?queues={queue}")
    assert [e["type"] for e in polled["events"]] == ["job.enqueued", "job.started", "job.completed"]
    enqueued, _, completed = polled["events"]
    assert enqueued["data"] == {"job_id": job["id"], "job_type": "report.build", "queue": queue}
    assert completed["subject"] == job["id"] and completed["specversion"] == "1.0"
    assert (completed["data"]["attempt"], completed["data"]["duration_ms"]) == (1, 1500)
    assert TIME.fullmatch(completed["time"]) and polled["has_more"] is False
    # Filtered by type, a page at a time: the cursor goes on from the last one read.
    first = await call(
        client, "GET", f"/v1/events?types=job.enqueued,job.completed&limit=1&queues={queue}"
    )
    assert [e["type"] for e in first["events"]] == ["job.enqueued"] and first["has_more"]
    rest = await call(
        client,
        "GET",
        f"/v1/events?types=job.enqueued,job.completed&queues={queue}&after={first['cursor']}",
    )
    assert [e["type"] for e in rest["events"]] == ["job.completed"]
    refused(
        await call(client, "GET", "/v1/events?types=job.exploded", expect=400), "invalid_request"
    )


async def test_a_job_past_its_visibility_timeout_is_settled_when_read(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    queue = unique("vis").lower()
    job = await push(client, options={"queue": queue})
    fetch = {"queues": [queue], "visibility_timeout_ms": 3000}
    await call(client, "POST", "/v1/workers/fetch", fetch)
    clock.advance(timedelta(milliseconds=3200))
    read = (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]
    # The lease ran out 0.2 s ago: a failed attempt, retried after the policy's first
    # wait (0.5 to 1 s with its jitter), counted from the moment it ran out.
    assert (read["state"], read["attempt"]) == ("retryable", 1)
    assert read["error"]["message"] == "lease expired"
    clock.advance(timedelta(milliseconds=800))
    read = (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]
    assert (read["state"], read["attempt"]) == ("available", 1)
    [again] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
    assert (again["id"], again["attempt"], again["error"]["message"]) == (
        job["id"],
        2,
        "lease expired",
    )


async def test_a_job_whose_visibility_timeout_ran_out_unread_is_available_when_read_later(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    """No one noticed the lease run out until long after: the retry delay is long over,
    so the job reads (and is fetched as) available at once, not retryable for a second."""
    queue = unique("vis").lower()
    job = await push(client, options={"queue": queue, "visibility_timeout_ms": 3000})
    await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]})
    clock.advance(60)
    read = (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]
    assert (read["state"], read["attempt"]) == ("available", 1)
    [again] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
    assert again["id"] == job["id"]


async def test_a_timed_out_then_dead_lettered_ojs_job_leaves_v1s_event_rows(
    client: httpx.AsyncClient, api: Api, db: Database, clock: ManualClock
) -> None:
    """Fetched and abandoned (its lease, the visibility timeout, runs out and the reaper
    settles it), fetched again and failed for good: over OJS, and as a v1 job of one task
    of 2 attempts dequeued and reported by its worker."""
    queue, other = unique("lost").lower(), unique("lost").lower()
    job = await push(client, options={"queue": queue, "retry": {"max_attempts": 2}})
    made = await one_task_v1_job(api, "lost", other, attempts=2)
    await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]})
    task = await api.dequeue(other)
    assert task is not None
    clock.advance(timedelta(minutes=31))  # past both leases (OJS's 30 s, v1's default)
    assert await reap_expired(db) == 2
    clock.advance(timedelta(minutes=10))  # past any retry delay
    await open_due_retries(db)
    await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]})
    nack = {"job_id": job["id"], "error": {"message": "gave up"}}
    assert (await call(client, "POST", "/v1/workers/nack", nack))["state"] == "discarded"
    assert await api.dequeue(other) is not None
    failed = await api.call(
        "PUT", f"/v1/tasks/{task['id']}/status", json={"status": "FAILED", "reason": "gave up"}
    )
    assert failed["status"] == "FAILED"

    async def moves(job_id: uuid.UUID) -> list[tuple[Any, ...]]:
        rows = await db.transaction(
            lambda s: s.execute(
                select(
                    Event.entity, Event.from_status, Event.to_status, Event.attempt, Event.reason
                )
                .where(Event.job_id == job_id)
                .order_by(Event.seq)
            )
        )
        return [tuple(r) for r in rows]

    ojs_job = await db.transaction(
        lambda s: s.scalar(select(Task.job_id).where(Task.id == uuid.UUID(job["id"])))
    )
    ojs_moves, v1_moves = await moves(ojs_job), await moves(uuid.UUID(made["id"]))
    assert ojs_moves == v1_moves
    assert ("TASK", "IN_PROGRESS", "RETRIED", 1, "lease expired") in ojs_moves
    assert ojs_moves[-1][:3] == ("JOB", "IN_PROGRESS", "FAILED")
    listed = await call(client, "GET", f"/v1/dead-letter?queue={queue}")
    assert [j["id"] for j in listed["jobs"]] == [job["id"]]


async def test_a_job_past_its_expiry_is_never_fetched_and_reads_discarded(
    client: httpx.AsyncClient, db: Database, clock: ManualClock
) -> None:
    queue = unique("ttl").lower()
    job = await push(client, options={"queue": queue, "expires_at": "+PT2S"})
    assert job["state"] == "available" and TIME.fullmatch(job["expires_at"])
    far = await push(client, options={"queue": queue, "expires_at": "2099-12-31T23:59:59Z"})
    assert far["expires_at"] == "2099-12-31T23:59:59Z"
    clock.advance(3)
    [fetched] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
    assert fetched["id"] == far["id"]  # the expired one is not handed out
    await expire_due(db)  # the maintenance tick's
    read = (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]
    assert read["state"] == "discarded" and "completed_at" not in read
    past = {"type": "a", "args": [], "options": {"expires_at": "2020-01-01T00:00:00Z"}}
    refused(await call(client, "POST", "/v1/jobs", past, 400), "invalid_request")


async def test_a_paused_queue_takes_pushes_and_hands_out_nothing_until_resumed(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("paused").lower()
    paused = await call(client, "POST", f"/v1/queues/{queue}/pause", {})
    assert paused["queue"] == {"name": queue, "paused": True, "status": "paused"}
    job = await push(client, options={"queue": queue})
    assert (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"] == []
    stats = (await call(client, "GET", f"/v1/queues/{queue}/stats"))["queue"]
    assert (stats["name"], stats["paused"], stats["available"], stats["active"]) == (
        queue,
        True,
        1,
        0,
    )
    await call(client, "POST", f"/v1/queues/{queue}/resume", {})
    [fetched] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
    assert fetched["id"] == job["id"]
    await call(client, "POST", "/v1/workers/ack", {"job_id": job["id"]})
    stats = (await call(client, "GET", f"/v1/queues/{queue}/stats"))["queue"]
    assert (stats["paused"], stats["completed"], stats["stats"]["completed_last_hour"]) == (
        False,
        1,
        1,
    )


async def test_a_cron_job_makes_its_job_each_time_and_is_listed_and_removed(
    client: httpx.AsyncClient, db: Database, clock: ManualClock
) -> None:
    queue, name = unique("nightly").lower(), unique("cron")
    body = {
        "name": name,
        "expression": "*/5 * * * *",
        "timezone": "Europe/Paris",
        "job_template": {"type": "report.build", "args": [7], "options": {"queue": queue}},
    }
    made = (await call(client, "POST", "/v1/cron", body, 201))["cron"]
    assert (made["name"], made["expression"], made["enabled"]) == (name, "*/5 * * * *", True)
    assert made["job_template"]["type"] == "report.build" and TIME.fullmatch(made["next_run_at"])
    refused(await call(client, "POST", "/v1/cron", body, 409), "duplicate")
    clock.advance(timedelta(minutes=5))
    await fire_due(db, job_of)  # the maintenance tick's
    [job] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
    assert (job["type"], job["args"], job["queue"]) == ("report.build", [7], queue)
    assert name in [c["name"] for c in (await call(client, "GET", "/v1/cron"))["crons"]]
    assert (await call(client, "DELETE", f"/v1/cron/{name}"))["cron"] == {"name": name}
    refused(await call(client, "DELETE", f"/v1/cron/{name}", expect=404), "not_found")
    for bad in (
        {**body, "name": unique("c"), "expression": "every day"},
        {**body, "name": unique("c"), "expression": "* * * * * * *"},
        {**body, "name": unique("c"), "expression": "61 * * * *"},
        {**body, "name": unique("c"), "job_template": {"type": "Bad", "args": []}},
        {**body, "name": unique("c"), "timezone": "Mars/Olympus"},
    ):
        refused(await call(client, "POST", "/v1/cron", bad, 400), "invalid_request")


@pytest.mark.parametrize(
    ("strategy", "waits"),
    [("linear", [1000, 2000, 3000]), ("constant", [1000, 1000, 1000]), (None, [1000, 2000, 4000])],
)
async def test_a_retry_policys_backoff_strategy_sets_each_wait(
    client: httpx.AsyncClient, clock: ManualClock, strategy: str | None, waits: list[int]
) -> None:
    queue = unique("q").lower()
    retry: dict[str, Any] = {"max_attempts": 5, "initial_interval": "PT1S", "jitter": False}
    if strategy is not None:
        retry["backoff_strategy"] = strategy
    job = await push(client, options={"queue": queue, "retry": retry})
    error = {"message": "again", "retryable": True}
    for wait in waits:
        [active] = (await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]}))["jobs"]
        said = await call(client, "POST", "/v1/workers/nack", {"job_id": job["id"], "error": error})
        assert (active["id"], said["state"], said["retry_delay_ms"]) == (
            job["id"],
            "retryable",
            wait,
        )
        clock.advance(timedelta(milliseconds=wait + 1))
    bad = {**retry, "backoff_strategy": "fibonacci"}
    refused(
        await call(
            client, "POST", "/v1/jobs", {"type": "a", "args": [], "options": {"retry": bad}}, 422
        ),
        "validation_error",
    )


async def test_a_jobs_own_visibility_timeout_is_its_lease_unless_the_fetch_names_one(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    queue = unique("q").lower()
    options = {"queue": queue, "visibility_timeout_ms": 3000}
    own, other = await push(client, options=options), await push(client, options=options)
    await call(client, "POST", "/v1/workers/fetch", {"queues": [queue], "worker_id": "w"})
    named = {"queues": [queue], "worker_id": "w", "visibility_timeout_ms": 10_000}
    await call(client, "POST", "/v1/workers/fetch", named)

    async def state(job: dict[str, Any]) -> str:
        said: str = (await call(client, "GET", f"/v1/jobs/{job['id']}"))["job"]["state"]
        return said

    clock.advance(timedelta(milliseconds=2000))
    beat = {"worker_id": "w", "active_jobs": [own["id"]]}
    assert (await call(client, "POST", "/v1/workers/heartbeat", beat))["jobs_extended"] == [
        own["id"]
    ]
    clock.advance(timedelta(milliseconds=2500))  # 4.5 s in: the beat renewed it for 3 s
    assert (await state(own), await state(other)) == ("active", "active")
    clock.advance(timedelta(milliseconds=1000))  # 5.5 s: past its own 3 s since the beat
    assert (await state(own), await state(other)) == ("retryable", "active")
    bad = {"type": "a", "args": [], "options": {"visibility_timeout_ms": 10}}
    refused(await call(client, "POST", "/v1/jobs", bad, 400), "invalid_request")


@pytest.mark.parametrize("told", [{"overlap_policy": "skip"}, {}], ids=["skip", "by default"])
async def test_a_cron_job_that_skips_overlaps_makes_none_while_its_last_is_active(
    client: httpx.AsyncClient, db: Database, clock: ManualClock, told: dict[str, str]
) -> None:
    queue, name = unique("overlap").lower(), unique("cron")
    template = {"type": "cron.long", "args": [], "options": {"queue": queue}}
    body = {"name": name, "expression": "* * * * *", **told}
    made = await call(client, "POST", "/v1/cron", {**body, "job_template": template}, 201)
    assert made["cron"]["overlap_policy"] == "skip"
    clock.advance(timedelta(seconds=10))
    for _ in range(2):  # a minute on, then another: the first job is running by then
        clock.advance(timedelta(seconds=65))
        # The first job's reservation (the default visibility timeout, 30 minutes) holds
        # past the minute it was fetched in: the reaper does not take it back.
        assert await reap_expired(db) == 0
        await fire_due(db, job_of)
        fetched = await call(client, "POST", "/v1/workers/fetch", {"queues": [queue]})
        if _ == 0:
            assert [j["state"] for j in fetched["jobs"]] == ["active"]
    assert fetched["jobs"] == []
