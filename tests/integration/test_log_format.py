"""JOBNIK_LOG_FORMAT=json, as on the production profile: every line its manager
replicas write is one JSON object with the time, level, logger and message, uvicorn's
access lines included, and a request's lines carry the ids its path names."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from ..support.processes import manager_process
from ..support.profiles import production

pytestmark = pytest.mark.e2e  # a manager process


def test_every_line_is_json_with_the_ids_of_its_request(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    missing = "00000000-0000-0000-0000-00000000abcd"
    with production(request, tmp_path) as profile:
        headers = profile.headers("producer")
        body = {"name": "logged", "data": {}, "stages": [{"type": "t", "data": {}, "tasks": []}]}
        created = httpx.post(f"{profile.url}/v1/jobs", json=body, headers=headers)
        assert created.status_code == 201
        assert httpx.get(f"{profile.url}/v1/jobs/{missing}", headers=headers).status_code == 404
    lines = [
        line for r in profile.replicas for line in r.log.read_text().splitlines() if line.strip()
    ]
    assert lines
    records = [json.loads(line) for line in lines]  # every line parses
    for record in records:
        assert {"time", "level", "logger", "message"} <= record.keys(), record
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    assert {(r["method"], r["path"].split("?")[0], r["status"]) for r in access} >= {
        ("POST", "/v1/jobs", 201),
        ("GET", f"/v1/jobs/{missing}", 404),
    }
    [read] = [r for r in access if r["path"] == f"/v1/jobs/{missing}"]
    assert read["job_id"] == missing
    assert any(r["logger"] == "uvicorn.error" for r in records)


@pytest.mark.parametrize("access_log", ["true", "false"])
def test_the_access_log_can_be_turned_off(tmp_path: Path, access_log: str) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'quiet.db'}"
    log = tmp_path / "manager.log"
    settings = {"JOBNIK_LOG_LEVEL": "info", "JOBNIK_LOG_FORMAT": "json"}
    with manager_process(url, log=log, JOBNIK_ACCESS_LOG=access_log, **settings) as base_url:
        body = {"name": "quiet", "data": {}}
        assert httpx.post(f"{base_url}/v1/jobs", json=body).status_code == 201
        scrape = httpx.get(f"{base_url}/metrics").text
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    posted = [r for r in access if (r["method"], r["path"]) == ("POST", "/v1/jobs")]
    assert len(posted) == (1 if access_log == "true" else 0), access
    # The rest of the log, and the request's count, stay.
    assert any(r["logger"] == "uvicorn.error" for r in records)
    assert 'route="/v1/jobs"' in scrape and 'status="201"' in scrape
