"""JOBNIK_LOG_FORMAT=json: every line a manager process writes is one JSON object with
the time, level, logger and message, uvicorn's access lines included, and a request's
lines carry the ids its path names."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from ..support.processes import manager_process

pytestmark = pytest.mark.e2e  # a manager process


def test_every_line_is_json_with_the_ids_of_its_request(tmp_path: Path) -> None:
    log = tmp_path / "manager.log"
    url = f"sqlite+aiosqlite:///{tmp_path / 'j.db'}"
    missing = "00000000-0000-0000-0000-00000000abcd"
    with manager_process(
        url,
        log=log,
        JOBNIK_LOG_FORMAT="json",
        JOBNIK_LOG_LEVEL="info",
        JOBNIK_MIGRATE_ON_START="true",
    ) as base:
        body = {"name": "logged", "data": {}, "stages": [{"type": "t", "data": {}, "tasks": []}]}
        assert httpx.post(f"{base}/v1/jobs", json=body).status_code == 201
        assert httpx.get(f"{base}/v1/jobs/{missing}").status_code == 404
    lines = log.read_text().splitlines()
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
