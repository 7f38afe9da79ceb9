"""JOBNIK_AUTH=on, over HTTP on both backends: every (role, endpoint) pair is allowed or
refused (401 without a live token, 403 for what the role may not do) as docs/auth.md
says, and a refused call changes nothing; a hostile body is refused 401 without a live
token and 400 with one, never a 500, and a long one does not get past a rule; the app's
lifespan (its background loops) starts with auth on."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from sqlalchemy import func, select

from jobnik_manager.app import create_app
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import (
    Event,
    Job,
    Schedule,
    Stage,
    StageTypeLimit,
    Task,
    WorkerDirective,
)
from jobnik_manager.domain.auth import Role
from jobnik_manager.domain.schedules import Timing
from jobnik_manager.services import schedules, tokens
from jobnik_manager.services.jobs import create_job
from jobnik_manager.services.schedules import ScheduleSpec
from jobnik_manager.services.specs import NewJob, NewStage, NewTask
from jobnik_manager.settings import Settings

from ..support.apps import app_on

A, B = "auth-a", "auth-b"
# Who asks: a token of each role; alice owns the job the requests name.
WHO = {
    "admin": (Role.ADMIN, ()),
    "operator": (Role.OPERATOR, ()),
    "alice": (Role.PRODUCER, ()),
    "bob": (Role.PRODUCER, ()),
    "worker": (Role.WORKER, ()),
    "worker-a": (Role.WORKER, (A,)),
    "worker-b": (Role.WORKER, (B,)),
}
READERS = {"admin", "operator", "alice", "worker", "worker-a"}
LISTERS = {"admin", "operator", "alice", "bob"}
WORKERS = {"admin", "worker", "worker-a"}
OWNER = {"admin", "alice"}
CONTROL = {"admin", "operator", "alice"}
OPERATE = {"admin", "operator"}
ANNOTATE = OWNER | {"worker", "worker-a"}


@dataclass
class Scene:
    job: str
    stage: str  # type A, running
    waiting: str  # type A, waiting for approval
    task: str
    schedule: str  # alice's


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    allowed: set[str]
    body: Any = None

    def request(self, scene: Scene) -> tuple[str, str, Any]:
        fill = {"job": scene.job, "stage": scene.stage, "waiting": scene.waiting}
        fill["task"], fill["schedule"] = scene.task, scene.schedule
        fill["fresh"] = uuid.uuid4().hex[:8]  # a name no call used before
        path = self.path.format(**fill)
        body = self.body(scene) if callable(self.body) else self.body
        return self.method, path, body


LEASE = str(uuid.uuid4())
ASSET = {"type": "report", "uri": "/exports/report.pdf"}
SCHEDULE = {"cron": "@daily", "job": {"name": "jj", "data": {}}}

CASES = [
    Case("list jobs", "GET", "/v1/jobs", LISTERS),
    Case("create job", "POST", "/v1/jobs", {"admin", "alice", "bob"}, {"name": "jj", "data": {}}),
    Case("read job", "GET", "/v1/jobs/{job}", READERS),
    Case("job events", "GET", "/v1/jobs/{job}/events", READERS),
    Case("job stages", "GET", "/v1/jobs/{job}/stages", READERS),
    Case("priority", "PATCH", "/v1/jobs/{job}/priority", OWNER, {"priority": "HIGH"}),
    Case("job metadata", "PATCH", "/v1/jobs/{job}/user-metadata", OWNER, {"k": 1}),
    Case("add stage", "POST", "/v1/jobs/{job}/stage", OWNER, {"type": A, "data": {}}),
    Case("pause", "PUT", "/v1/jobs/{job}/status", CONTROL, {"status": "PAUSED"}),
    Case("abort", "PUT", "/v1/jobs/{job}/status", CONTROL, {"status": "ABORTED"}),
    Case("retry", "POST", "/v1/jobs/{job}/retry", OPERATE),
    Case("delete", "DELETE", "/v1/jobs/{job}", CONTROL),
    Case("list stages", "GET", "/v1/stages", LISTERS),
    Case("read stage", "GET", "/v1/stages/{stage}", READERS),
    Case("stage summary", "GET", "/v1/stages/{stage}/summary", READERS),
    Case("stage tasks", "GET", "/v1/stages/{stage}/tasks", READERS),
    Case("approve", "PUT", "/v1/stages/{waiting}/status", OPERATE, {"status": "PENDING"}),
    Case("stage metadata", "PATCH", "/v1/stages/{stage}/user-metadata", OWNER, {"k": 1}),
    Case("add tasks", "POST", "/v1/stages/{stage}/tasks", OWNER, [{"data": {}}]),
    Case("dequeue", "PATCH", f"/v1/stages/{A}/tasks/dequeue", WORKERS),
    Case("claim", "POST", "/v1/tasks/claim", WORKERS, {"stageTypes": [A]}),
    Case("list tasks", "GET", "/v1/tasks", LISTERS),
    Case("stage types", "GET", "/v1/stage-types", LISTERS),
    Case("stage type flow", "GET", f"/v1/stage-types/{A}/flow", LISTERS),
    Case("read task", "GET", "/v1/tasks/{task}", READERS),
    Case("heartbeat", "POST", "/v1/tasks/{task}/heartbeat", WORKERS, {"leaseId": LEASE}),
    Case(
        "heartbeats",
        "POST",
        "/v1/tasks/heartbeats",
        WORKERS,
        lambda s: {"heartbeats": [{"taskId": s.task, "leaseId": LEASE}]},
    ),
    Case(
        "reports",
        "POST",
        "/v1/tasks/reports",
        WORKERS,
        lambda s: {"reports": [{"taskId": s.task, "status": "COMPLETED"}]},
    ),
    Case("report", "PUT", "/v1/tasks/{task}/status", WORKERS, {"status": "COMPLETED"}),
    Case("cancel task", "PUT", "/v1/tasks/{task}/status", CONTROL, {"status": "ABORTED"}),
    Case("task event", "POST", "/v1/tasks/{task}/events", WORKERS, {"name": "step"}),
    Case("task assets", "POST", "/v1/tasks/{task}/assets", WORKERS, {"assets": [ASSET]}),
    Case("job result", "PUT", "/v1/tasks/{task}/job-result", WORKERS, {"result": {"n": 1}}),
    Case("job assets", "GET", "/v1/jobs/{job}/assets", READERS),
    Case("dead letters", "GET", "/v1/dead-letters", LISTERS),
    Case("retry dead letters", "POST", "/v1/dead-letters/retry", OPERATE, {"stageType": A}),
    Case("discard dead letters", "POST", "/v1/dead-letters/discard", OPERATE, {"stageType": A}),
    Case("limit stage type", "PUT", f"/v1/stage-types/{A}/limits", OPERATE, {"maxInFlight": 2}),
    Case("unlimit stage type", "DELETE", f"/v1/stage-types/{A}/limits", OPERATE),
    Case("list schedules", "GET", "/v1/schedules", LISTERS),
    Case("new schedule", "PUT", "/v1/schedules/made-{fresh}", {"admin", "alice", "bob"}, SCHEDULE),
    Case("replace schedule", "PUT", "/v1/schedules/{schedule}", OWNER, SCHEDULE),
    Case("read schedule", "GET", "/v1/schedules/{schedule}", READERS - {"worker-a"}),
    Case("schedule runs", "GET", "/v1/schedules/{schedule}/runs", READERS - {"worker-a"}),
    Case("pause schedule", "PUT", "/v1/schedules/{schedule}/pause", CONTROL),
    Case("resume schedule", "DELETE", "/v1/schedules/{schedule}/pause", CONTROL),
    Case("run schedule", "POST", "/v1/schedules/{schedule}/run", CONTROL),
    Case("delete schedule", "DELETE", "/v1/schedules/{schedule}", CONTROL),
    # Where a handler's progress goes: its worker writes it too.
    Case("task metadata", "PATCH", "/v1/tasks/{task}/user-metadata", ANNOTATE, {"k": 1}),
    Case("list tokens", "GET", "/v1/tokens", {"admin"}),
    Case("create token", "POST", "/v1/tokens", {"admin"}, {"name": "made", "role": "worker"}),
    Case("revoke token", "DELETE", "/v1/tokens/spare", {"admin"}),
]


@dataclass
class Authed:
    http: httpx.AsyncClient
    tokens: dict[str, str]
    db: Database

    def as_(self, who: str | None) -> dict[str, str]:
        return {} if who is None else {"authorization": f"Bearer {self.tokens[who]}"}

    async def call(
        self, who: str | None, method: str, path: str, body: Any = None
    ) -> httpx.Response:
        return await self.http.request(method, path, json=body, headers=self.as_(who))

    async def scene(self) -> Scene:
        """A job of alice's: a running stage of type A with two tasks, then a waiting one
        (made in the database: the calls under test are what goes through HTTP)."""
        tasks = (NewTask(data={}), NewTask(data={}))
        new = NewJob(
            name="owned",
            data={},
            owner="alice",
            stages=[
                NewStage(type=A, data={}, tasks=tasks),
                NewStage(type=A, data={}, start_as_waiting=True, tasks=(NewTask(data={}),)),
            ],
        )
        made = await self.db.transaction(lambda s: create_job(s, new))
        first, waiting = made.stages
        name = f"alices-{uuid.uuid4().hex[:8]}"
        spec = ScheduleSpec(name, Timing("@daily", None), {"name": "nightly", "data": {}})
        await self.db.transaction(lambda s: schedules.put(s, spec, "alice"))
        return Scene(
            str(made.job.id),
            str(first.stage.id),
            str(waiting.stage.id),
            str(first.tasks[0]["id"]),
            name,
        )


@pytest.fixture
async def authed(db: Database) -> AsyncIterator[Authed]:
    made = {}
    for who, (role, types) in WHO.items():
        made[who] = (
            await db.transaction(lambda s, w=who, r=role, t=types: tokens.create(s, w, r, t))
        ).token
    await db.transaction(lambda s: tokens.create(s, "spare", Role.WORKER))
    with app_on(db, Settings(database_url=db.url, auth="on")) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://m") as http:
            yield Authed(http, made, db)


async def snapshot(db: Database) -> tuple[Any, ...]:
    async def read(s: Any) -> tuple[Any, ...]:
        counts = [
            await s.scalar(select(func.count()).select_from(m)) for m in (Job, Stage, Task, Event)
        ]
        jobs = (await s.execute(select(Job.status, Job.priority, Job.user_metadata))).all()
        states = (await s.execute(select(Task.status, Task.user_metadata).order_by(Task.seq))).all()
        plans = (await s.execute(select(Schedule.name, Schedule.paused_at, Schedule.cron))).all()
        plans += (await s.execute(select(StageTypeLimit.type, StageTypeLimit.max_in_flight))).all()
        return (*counts, sorted(map(str, jobs)), list(map(str, states)), sorted(map(str, plans)))

    return await db.transaction(read)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_each_role_is_allowed_or_refused_and_a_refusal_changes_nothing(
    authed: Authed, case: Case
) -> None:
    scene: Scene | None = None
    for who in [None, *WHO]:
        if scene is None:  # a fresh one after a call that may have changed it
            scene = await authed.scene()
            before = await snapshot(authed.db)
        method, path, body = case.request(scene)
        answer = await authed.call(who, method, path, body)
        if who is None:
            assert answer.status_code == 401, (who, answer.text)
            assert answer.json()["code"] == "UNAUTHORIZED"
        elif who in case.allowed:
            assert answer.status_code not in (401, 403), (who, answer.text)
            scene = None
            continue
        else:
            assert answer.status_code == 403, (who, answer.text)
            assert answer.json()["code"] == "FORBIDDEN"
        assert await snapshot(authed.db) == before, who


async def test_a_bad_or_revoked_token_is_refused_and_the_probes_stay_open(authed: Authed) -> None:
    bad = await authed.http.get("/v1/jobs", headers={"authorization": "Bearer jnk_nope"})
    assert (bad.status_code, bad.json()["code"]) == (401, "UNAUTHORIZED")
    assert bad.headers["www-authenticate"] == "Bearer"
    assert (await authed.call("operator", "GET", "/v1/jobs")).status_code == 200
    await authed.db.transaction(lambda s: tokens.revoke(s, "operator"))
    assert (await authed.call("operator", "GET", "/v1/jobs")).status_code == 401
    for path in ("/liveness", "/readiness", "/metrics"):
        assert (await authed.http.get(path)).status_code == 200


async def test_a_producer_sees_and_steers_only_its_own_jobs(authed: Authed) -> None:
    scene = await authed.scene()

    async def listed(who: str, what: str) -> list[str]:
        page = (await authed.call(who, "GET", f"/v1/{what}")).json()
        return [item["id"] for item in page["items"]]

    assert scene.job in await listed("alice", "jobs")
    assert (await authed.call("alice", "GET", f"/v1/jobs/{scene.job}")).json()["owner"] == "alice"
    assert scene.job not in await listed("bob", "jobs")
    assert scene.job in await listed("operator", "jobs")
    assert scene.stage not in await listed("bob", "stages")
    assert scene.task not in await listed("bob", "tasks")
    assert scene.task in await listed("alice", "tasks")
    bobs = await authed.call("bob", "POST", "/v1/jobs", {"name": "bobs", "data": {}})
    assert await listed("bob", "jobs") == [bobs.json()["id"]]
    assert (
        await authed.call("bob", "PUT", f"/v1/jobs/{scene.job}/status", {"status": "ABORTED"})
    ).status_code == 403
    assert (await authed.call("alice", "GET", f"/v1/jobs/{bobs.json()['id']}")).status_code == 403


async def test_a_worker_limited_to_a_type_claims_only_that_type(authed: Authed) -> None:
    await authed.scene()
    other = {
        "name": "other",
        "data": {},
        "stages": [{"type": B, "data": {}, "tasks": [{"data": {}}]}],
    }
    assert (await authed.call("alice", "POST", "/v1/jobs", other)).status_code == 201
    assert (
        await authed.call("worker-a", "PATCH", f"/v1/stages/{B}/tasks/dequeue")
    ).status_code == 403
    both = {"stageTypes": [A, B]}
    assert (await authed.call("worker-a", "POST", "/v1/tasks/claim", both)).status_code == 403
    claimed = await authed.call("worker-b", "POST", "/v1/tasks/claim", {"stageTypes": [B]})
    assert claimed.status_code == 200
    [task] = claimed.json()["items"]
    lease = task["leaseId"]
    # Its report is worker-b's to make, not worker-a's.
    report = {"status": "COMPLETED", "leaseId": lease}
    assert (
        await authed.call("worker-a", "PUT", f"/v1/tasks/{task['id']}/status", report)
    ).status_code == 403
    assert (
        await authed.call("worker-b", "PUT", f"/v1/tasks/{task['id']}/status", report)
    ).status_code == 200


async def test_the_event_log_names_who_made_each_change(authed: Authed) -> None:
    scene = await authed.scene()
    job = f"/v1/jobs/{scene.job}"
    for who, status in (("operator", "PAUSED"), ("alice", "PENDING")):
        answer = await authed.call(who, "PUT", f"{job}/status", {"status": status})
        assert answer.status_code == 200, answer.text
    assert (
        await authed.call("admin", "PUT", f"{job}/status", {"status": "ABORTED"})
    ).status_code == 200
    page = (await authed.call("operator", "GET", f"{job}/events?page_size=1000")).json()
    moves = {(e["entity"], e["toStatus"]): e.get("principal") for e in page["items"]}
    assert moves[("JOB", "PAUSED")] == "operator"
    assert moves[("JOB", "PENDING")] in ("alice", None)  # PENDING: created, then resumed
    resumed = [e for e in page["items"] if e["fromStatus"] == "PAUSED" and e["entity"] == "JOB"]
    assert [e["principal"] for e in resumed] == ["alice"]
    assert moves[("JOB", "ABORTED")] == "admin"


async def test_an_admin_manages_tokens_over_the_api(authed: Authed) -> None:
    made = await authed.call("admin", "POST", "/v1/tokens", {"name": "new-ops", "role": "operator"})
    assert made.status_code == 201, made.text
    token = made.json()["token"]
    assert token.startswith("jnk_")
    fresh = {"authorization": f"Bearer {token}"}
    assert (await authed.http.get("/v1/jobs", headers=fresh)).status_code == 200
    listed = (await authed.call("admin", "GET", "/v1/tokens")).json()
    assert {t["name"]: t["role"] for t in listed}["new-ops"] == "operator"
    assert all("token" not in t for t in listed)
    again = await authed.call("admin", "POST", "/v1/tokens", {"name": "new-ops", "role": "admin"})
    assert (again.status_code, again.json()["code"]) == (409, "TOKEN_NAME_TAKEN")
    limited = {"name": "p", "role": "producer", "stageTypes": [A]}
    refused = await authed.call("admin", "POST", "/v1/tokens", limited)
    assert (refused.status_code, refused.json()["code"]) == (400, "VALIDATION_ERROR")
    revoked = await authed.call("admin", "DELETE", "/v1/tokens/new-ops")
    assert revoked.status_code == 200 and revoked.json()["revokedAt"]
    assert (await authed.http.get("/v1/jobs", headers=fresh)).status_code == 401
    gone = await authed.call("admin", "DELETE", "/v1/tokens/new-ops")
    assert (gone.status_code, gone.json()["code"]) == (404, "TOKEN_NOT_FOUND")


async def lifespan(app: Any) -> list[str]:
    """Start `app` and stop it as a server does; the lifespan messages it sent back."""
    sent: list[str] = []
    started = asyncio.Event()

    async def receive() -> dict[str, str]:
        if not sent:
            return {"type": "lifespan.startup"}
        await started.wait()
        return {"type": "lifespan.shutdown"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])
        started.set()

    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    await asyncio.wait_for(app(scope, receive, send), 10)
    return sent


@pytest.mark.parametrize("traced", [False, True], ids=["untraced", "traced"])
async def test_the_apps_lifespan_runs_with_auth_on_through_every_middleware(
    db: Database, traced: bool
) -> None:
    # The lifespan starts the reaper, retries, schedules and relay: a middleware that
    # fails on a lifespan scope leaves a server answering requests with none of them.
    settings = Settings(database_url=db.url, auth="on", metrics=True, auth_metrics=True)
    app = create_app(settings, database=db, tracer_provider=TracerProvider() if traced else None)
    try:
        assert await lifespan(app) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    finally:
        if traced:
            # The statements' instrumentation is the process's: a later test that traces
            # (test_tracing.py) must install its own.
            SQLAlchemyInstrumentor().uninstrument()


# Bodies no parser should be trusted with: nesting past the parser's depth, spelled at
# once and with containers closing on the way down, and text that is not JSON.
HOSTILE = {
    "deep": b'{"status": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "deep, closing on the way": b'{"status": ' + b"[[]," * 5000 + b"]" * 5000 + b"}",
    "not JSON": b'{"status": "ABORTED", ',
}


async def test_a_hostile_body_is_refused_401_without_a_live_token_400_with_one(
    authed: Authed,
) -> None:
    scene = await authed.scene()
    before = await snapshot(authed.db)
    calls = [
        ("PUT", f"/v1/tasks/{scene.task}/status"),
        ("POST", "/v1/tasks/claim"),
        ("POST", "/v1/tasks/heartbeats"),
        ("POST", "/v1/tasks/reports"),
    ]
    json_body = {"content-type": "application/json"}
    for method, path in calls:
        for name, body in HOSTILE.items():
            for who in (None, "worker-a", "worker", "admin"):
                headers = {"authorization": "Bearer jnk_nope", **json_body}
                if who is not None:
                    headers = {**authed.as_(who), **json_body}
                answer = await authed.http.request(method, path, content=body, headers=headers)
                expected = (401, "UNAUTHORIZED") if who is None else (400, "VALIDATION_ERROR")
                said = (method, path, name, who, answer.text[:200])
                assert (answer.status_code, answer.json()["code"]) == expected, said
    assert await snapshot(authed.db) == before


async def test_a_limited_worker_cannot_claim_past_its_stage_types_with_a_long_body(
    authed: Authed,
) -> None:
    other = {
        "name": "other",
        "data": {},
        "stages": [{"type": B, "data": {}, "tasks": [{"data": {}}]}],
    }
    assert (await authed.call("alice", "POST", "/v1/jobs", other)).status_code == 201
    # Valid JSON, padded past what the authenticator once read of a body, and sent in
    # chunks as a server hands it on.
    padded = b'{"stageTypes": ["' + B.encode() + b'"]' + b" " * (2 * 1024 * 1024) + b"}"

    async def chunks() -> AsyncIterator[bytes]:
        for at in range(0, len(padded), 65536):
            yield padded[at : at + 65536]

    headers = {**authed.as_("worker-a"), "content-type": "application/json"}
    answer = await authed.http.post("/v1/tasks/claim", content=chunks(), headers=headers)
    assert answer.status_code == 403, answer.text
    assert answer.json()["code"] == "FORBIDDEN"
    claimed = await authed.call("worker-b", "POST", "/v1/tasks/claim", {"stageTypes": [B]})
    assert len(claimed.json()["items"]) == 1  # still there for a worker of its type


@pytest.mark.postgres_only
async def test_a_token_lookup_whose_database_went_away_answers_503(
    pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token is looked up in a middleware, where the app's handlers cannot answer: a
    connection lost as that lookup commits (a database restarting) is a 503 to retry,
    not a 500."""
    import asyncpg

    made = await pg_db.transaction(lambda s: tokens.create(s, "ops", Role.OPERATOR))
    commit = asyncpg.transaction.Transaction.commit

    async def answer_lost(self: asyncpg.transaction.Transaction) -> None:
        await commit(self)
        self._connection.terminate()
        raise asyncpg.ConnectionDoesNotExistError(
            "connection was closed in the middle of operation"
        )

    with app_on(pg_db, Settings(database_url=pg_db.url, auth="on")) as app:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://m") as http:
            monkeypatch.setattr(asyncpg.transaction.Transaction, "commit", answer_lost)
            answer = await http.get("/v1/jobs", headers={"authorization": f"Bearer {made.token}"})
            monkeypatch.undo()
            again = await http.get("/v1/jobs", headers={"authorization": f"Bearer {made.token}"})
    assert (answer.status_code, answer.json()["code"]) == (503, "DATABASE_RELATED_ERROR")
    assert answer.headers["retry-after"] == "1"
    assert again.status_code == 200


async def test_the_open_job_spec_binding_keeps_the_roles_and_words_refusals_its_own_way(
    authed: Authed,
) -> None:
    push = {"type": "email.send", "args": [], "options": {"queue": A}}
    refused = await authed.call(None, "POST", "/ojs/v1/jobs", push)
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "unauthorized"
    assert refused.headers["content-type"] == "application/openjobspec+json"
    assert (await authed.call("worker", "POST", "/ojs/v1/jobs", push)).status_code == 403
    made = await authed.call("alice", "POST", "/ojs/v1/jobs", push)
    assert made.status_code == 201, made.text
    job = made.json()["job"]["id"]
    assert (await authed.call("bob", "GET", f"/ojs/v1/jobs/{job}")).status_code == 403
    assert (await authed.call("alice", "GET", f"/ojs/v1/jobs/{job}")).status_code == 200
    # A worker limited to another type may not fetch this queue, nor ack its jobs.
    other = await authed.call("worker-b", "POST", "/ojs/v1/workers/fetch", {"queues": [A]})
    assert other.status_code == 403 and other.json()["error"]["code"] == "forbidden"
    fetched = await authed.call("worker-a", "POST", "/ojs/v1/workers/fetch", {"queues": [A]})
    assert [j["id"] for j in fetched.json()["jobs"]] == [job]
    ack = {"job_id": job, "result": {"ok": True}}
    assert (await authed.call("worker-b", "POST", "/ojs/v1/workers/ack", ack)).status_code == 403
    acked = await authed.call("worker-a", "POST", "/ojs/v1/workers/ack", ack)
    assert acked.status_code == 200 and acked.json()["state"] == "completed"
    # The manifest and health are open, as /openapi.json and the probes are.
    for path in ("/ojs/manifest", "/ojs/v1/health"):
        assert (await authed.call(None, "GET", path)).status_code == 200
    # A workflow is its creator's: another producer may neither read nor cancel it.
    chain = {"type": "chain", "steps": [push, push]}
    assert (await authed.call("worker", "POST", "/ojs/v1/workflows", chain)).status_code == 403
    made = await authed.call("alice", "POST", "/ojs/v1/workflows", chain)
    assert made.status_code == 201, made.text
    path = f"/ojs/v1/workflows/{made.json()['workflow']['id']}"
    for method in ("GET", "DELETE"):
        assert (await authed.call("bob", method, path)).status_code == 403
    assert (await authed.call("alice", "GET", path)).json()["workflow"]["state"] == "running"
    cancelled = await authed.call("alice", "DELETE", path)
    assert cancelled.status_code == 200 and cancelled.json()["workflow"]["state"] == "cancelled"
    # Only an operator (or an admin) tells a worker to go quiet; who did is kept.
    for who in (None, "alice", "worker"):
        told = await authed.call(who, "POST", "/ojs/v1/admin/workers/w-7/quiet")
        assert told.status_code == (401 if who is None else 403), (who, told.text)
    told = await authed.call("operator", "POST", "/ojs/v1/admin/workers/w-7/quiet")
    assert told.status_code == 200 and told.json()["worker"]["state"] == "quiet"
    kept = await authed.db.transaction(lambda s: s.get(WorkerDirective, "w-7"))
    assert kept is not None and kept.principal == "operator"
    beat = await authed.call("worker", "POST", "/ojs/v1/workers/heartbeat", {"worker_id": "w-7"})
    assert beat.json()["state"] == "quiet"
