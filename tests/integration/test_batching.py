"""Single reports (`PUT /v1/tasks/{id}/status`) that arrive together are settled together
(services/batching.py): each still gets its own answer, a refused one refuses no
other, and each event row names the token that made its move, whoever shared its batch."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from jobnik_manager.db.engine import Database
from jobnik_manager.domain.auth import Role

from ..support.api import unique
from ..support.invariants import assert_invariants
from ..support.tokens import clients_as


async def test_reports_sent_at_once_are_each_answered_and_recorded_as_their_own(
    db: Database,
) -> None:
    producer, first, second = unique("producer"), unique("w1"), unique("w2")
    kind = unique("batched")
    roles = {producer: Role.PRODUCER, first: Role.WORKER, second: Role.WORKER}
    async with clients_as(db, roles) as apis:
        tasks = [{"data": {"i": i}, "maxAttempts": 2} for i in range(48)]
        stages = [{"type": kind, "data": {}, "tasks": tasks}]
        body = {"name": "batched", "data": {}, "stages": stages}
        job = await apis[producer].call("POST", "/v1/jobs", 201, json=body)
        claimed: dict[str, list[dict[str, Any]]] = {}
        for worker in (first, second):
            claim = {"stageTypes": [kind], "limit": 24}
            claimed[worker] = (await apis[worker].call("POST", "/v1/tasks/claim", json=claim))[
                "items"
            ]

        async def put(worker: str, task: dict[str, Any], status: str, lease: Any) -> Any:
            return await apis[worker].http.put(
                f"/v1/tasks/{task['id']}/status", json={"status": status, "leaseId": str(lease)}
            )

        # Each worker: 16 completions, 4 failures, and 4 reports under a lease it never
        # held, all at once and interleaved with the other's.
        sent = []
        for worker, mine in claimed.items():
            sent += [(worker, t, "COMPLETED", t["leaseId"]) for t in mine[:16]]
            sent += [(worker, t, "FAILED", t["leaseId"]) for t in mine[16:20]]
            sent += [(worker, t, "COMPLETED", uuid.uuid4()) for t in mine[20:]]
        answers = await asyncio.gather(*(put(*s) for s in sent))

        for (_, task, status, lease), answer in zip(sent, answers, strict=True):
            if lease == task["leaseId"]:
                assert answer.status_code == 200, answer.text
                expected = "COMPLETED" if status == "COMPLETED" else "RETRIED"
                assert answer.json()["status"] == expected
            else:
                assert answer.status_code == 409 and answer.json()["code"] == "LEASE_LOST"

        events = await apis[producer].call(
            "GET", f"/v1/jobs/{job['id']}/events", params={"page_size": 1000}
        )
        by_task = {
            (e["entityId"], e["toStatus"]): e["principal"]
            for e in events["items"]
            if e["entity"] == "TASK" and e["fromStatus"] == "IN_PROGRESS"
        }
        for worker, mine in claimed.items():
            for task in mine[:16]:
                assert by_task[(task["id"], "COMPLETED")] == worker
            for task in mine[16:20]:
                assert by_task[(task["id"], "RETRIED")] == worker
            for task in mine[20:]:
                assert not any(key[0] == task["id"] for key in by_task)  # still running
        stage = (await apis[producer].call("GET", f"/v1/jobs/{job['id']}/stages"))[0]
        summary = stage["summary"]
        assert (summary["completed"], summary["retried"], summary["inProgress"]) == (32, 8, 8)
    await assert_invariants(db)


async def test_dequeues_sent_at_once_each_get_a_task_of_their_own_or_none(db: Database) -> None:
    producer, first, second = unique("producer"), unique("w1"), unique("w2")
    kind = unique("dequeued")
    roles = {producer: Role.PRODUCER, first: Role.WORKER, second: Role.WORKER}
    async with clients_as(db, roles) as apis:
        stages = [{"type": kind, "data": {}, "tasks": [{"data": {"i": i}} for i in range(30)]}]
        body = {"name": "dequeued", "data": {}, "stages": stages}
        job = await apis[producer].call("POST", "/v1/jobs", 201, json=body)

        async def dequeue(worker: str, name: str | None) -> Any:
            params = {"worker": name} if name else {}
            return await apis[worker].http.patch(f"/v1/stages/{kind}/tasks/dequeue", params=params)

        # 40 at once for 30 tasks, from two tokens, some naming a worker and some not.
        asked = [
            (w, f"{w}-host" if i % 3 == 0 else None) for i in range(20) for w in (first, second)
        ]
        answers = await asyncio.gather(*(dequeue(*a) for a in asked))

        got = [(a, r.json()) for a, r in zip(asked, answers, strict=True) if r.status_code == 200]
        refused = [r for r in answers if r.status_code != 200]
        assert len(got) == 30 and len({task["id"] for _, task in got}) == 30
        assert all(r.status_code == 404 and r.json()["code"] == "TASK_NOT_FOUND" for r in refused)
        for (_, name), task in got:
            assert task["status"] == "IN_PROGRESS" and task.get("worker") == name

        events = await apis[producer].call(
            "GET", f"/v1/jobs/{job['id']}/events", params={"page_size": 1000}
        )
        claimed_by = {
            e["entityId"]: e["principal"]
            for e in events["items"]
            if e["entity"] == "TASK" and e["toStatus"] == "IN_PROGRESS"
        }
        assert claimed_by == {task["id"]: worker for (worker, _), task in got}
    await assert_invariants(db)
