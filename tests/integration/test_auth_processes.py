"""Authentication with manager processes: tokens made and revoked by the command line
work, and stop working, at once on two replicas of one PostgreSQL database; nothing a
run logs or answers holds a token or its hash; the parity suite passes with auth on,
given an admin token; the background loops (the lease reaper) run with auth on."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from jobnik_manager.db.engine import Database
from jobnik_manager.domain.auth import Role
from jobnik_manager.services import tokens

from ..support.api import unique
from ..support.processes import ROOT, manager_command, manager_process
from ..support.profiles import production

pytestmark = pytest.mark.e2e  # manager processes and the command line


def test_a_revoked_token_stops_at_once_on_every_replica_and_is_never_logged(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with production(request, tmp_path, log_level="debug") as profile:
        url = profile.database_url
        token = manager_command(url, "tokens", "create", "--name", "ops", "--role", "operator")
        token = token.strip()
        assert token.startswith("jnk_") and len(token) > 40
        listed = manager_command(url, "tokens", "list")
        assert "ops\toperator" in listed and token not in listed
        bearer = {"authorization": f"Bearer {token}"}
        bodies = []
        replicas = [r.url for r in profile.replicas]
        for base in replicas:
            assert httpx.get(f"{base}/v1/jobs", headers=bearer).status_code == 200
            refused = httpx.get(f"{base}/v1/jobs", headers={"authorization": f"Bearer {token}x"})
            assert refused.status_code == 401
            bodies.append(refused.text)
        manager_command(url, "tokens", "revoke", "ops")
        for base in replicas:
            gone = httpx.get(f"{base}/v1/jobs", headers=bearer)
            assert (gone.status_code, gone.json()["code"]) == (401, "UNAUTHORIZED")
            bodies.append(gone.text)
    logs = [r.log for r in profile.replicas]
    digest = hashlib.sha256(token.encode()).hexdigest()
    written = "".join(log.read_text() for log in logs) + "".join(bodies)
    assert "/v1/jobs" in written  # the access lines are there
    lines = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    served = [r for r in lines if r["logger"] == "uvicorn.access" and r["path"] == "/v1/jobs"]
    # The access line of each request the token made names it (not its secret).
    assert {r.get("principal") for r in served if r["status"] == 200} == {"ops"}
    assert token not in written and token[4:] not in written and digest not in written


def test_the_parity_suite_passes_with_auth_on(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            "tests/integration/test_parity_flows.py",
        ],
        env={**os.environ, "JOBNIK_TEST_AUTH": "on"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout and "failed" not in done.stdout


async def test_with_auth_on_the_reaper_retries_a_task_whose_lease_ran_out(pg_db: Database) -> None:
    """The background loops run behind the authenticator: a claim whose 1 s lease runs
    out unrenewed is reaped and its task RETRIED within seconds."""
    made = {}
    for name, role in (("maker", Role.PRODUCER), ("runner", Role.WORKER)):
        made[name] = (
            await pg_db.transaction(lambda s, n=name, r=role: tokens.create(s, n, r))
        ).token
    kind = unique("reaped")
    env = {"JOBNIK_AUTH": "on", "JOBNIK_MAINTENANCE_INTERVAL": "0.2"}
    with manager_process(pg_db.url, **env) as base:
        async with httpx.AsyncClient(base_url=base) as http:

            def as_(who: str) -> dict[str, str]:
                return {"authorization": f"Bearer {made[who]}"}

            job = {
                "name": "reaped",
                "data": {},
                "stages": [{"type": kind, "data": {}, "tasks": [{"data": {}, "maxAttempts": 3}]}],
            }
            created = await http.post("/v1/jobs", json=job, headers=as_("maker"))
            assert created.status_code == 201, created.text
            claim = {"stageTypes": [kind], "leaseSeconds": 1}
            claimed = await http.post("/v1/tasks/claim", json=claim, headers=as_("runner"))
            [task] = claimed.json()["items"]
            assert task["status"] == "IN_PROGRESS"
            deadline = time.monotonic() + 10
            while True:
                read = await http.get(f"/v1/tasks/{task['id']}", headers=as_("maker"))
                if read.json()["status"] != "IN_PROGRESS" or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            assert read.json()["status"] == "RETRIED", read.text
            events = await http.get(f"/v1/jobs/{created.json()['id']}/events", headers=as_("maker"))
            reaped = [e for e in events.json()["items"] if e["toStatus"] == "RETRIED"]
            assert [e["reason"] for e in reaped] == ["lease expired"]
