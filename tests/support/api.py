"""A thin test client over the wire API: each call asserts the status it expects and
returns the decoded body, so tests read as the flows they check."""

from __future__ import annotations

import uuid
from typing import Any

import httpx


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class Api:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.http = client

    async def call(self, method: str, url: str, expect: int = 200, **kw: Any) -> Any:
        response = await self.http.request(method, url, **kw)
        assert response.status_code == expect, (
            f"{method} {url}: expected {expect}, got {response.status_code}: {response.text}"
        )
        return response.json() if response.content else None

    async def create_job(self, priority: str | None = None, **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"name": unique("job"), "data": {"k": "v"}, **extra}
        if priority:
            body["priority"] = priority
        return await self.call("POST", "/v1/jobs", 201, json=body)  # type: ignore[no-any-return]

    async def create_stage(
        self, job_id: str, stage_type: str | None = None, *, waiting: bool = False, **extra: Any
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"type": stage_type or unique("stage"), "data": {}, **extra}
        if waiting:
            body["startAsWaiting"] = True
        return await self.call("POST", f"/v1/jobs/{job_id}/stage", 201, json=body)  # type: ignore[no-any-return]

    async def create_tasks(
        self, stage_id: str, n: int = 1, **task_fields: Any
    ) -> list[dict[str, Any]]:
        tasks = [{"data": {"i": i}, **task_fields} for i in range(n)]
        return await self.call("POST", f"/v1/stages/{stage_id}/tasks", 201, json=tasks)  # type: ignore[no-any-return]

    async def one_stage_job(
        self, prefix: str, tasks: int = 1
    ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        """A job with one stage (of a type named after `prefix`) and its tasks."""
        job = await self.create_job()
        stage = await self.create_stage(job["id"], unique(prefix))
        return job, stage, await self.create_tasks(stage["id"], tasks)

    async def dequeue(self, stage_type: str) -> dict[str, Any] | None:
        response = await self.http.patch(f"/v1/stages/{stage_type}/tasks/dequeue")
        if response.status_code == 404:
            assert response.json()["code"] == "TASK_NOT_FOUND"
            return None
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    async def report(self, task_id: str, status: str, expect: int = 200) -> dict[str, Any]:
        return await self.call(  # type: ignore[no-any-return]
            "PUT", f"/v1/tasks/{task_id}/status", expect, json={"status": status}
        )

    async def job(self, job_id: str, **params: Any) -> dict[str, Any]:
        return await self.call("GET", f"/v1/jobs/{job_id}", params=params)  # type: ignore[no-any-return]

    async def stage(self, stage_id: str) -> dict[str, Any]:
        return await self.call("GET", f"/v1/stages/{stage_id}")  # type: ignore[no-any-return]

    async def task(self, task_id: str) -> dict[str, Any]:
        return await self.call("GET", f"/v1/tasks/{task_id}")  # type: ignore[no-any-return]

    async def set_job_status(self, job_id: str, status: str, expect: int = 200) -> Any:
        return await self.call("PUT", f"/v1/jobs/{job_id}/status", expect, json={"status": status})

    async def approve(self, stage_id: str, expect: int = 200) -> Any:
        return await self.call(
            "PUT", f"/v1/stages/{stage_id}/status", expect, json={"status": "PENDING"}
        )

    async def run_one(self, stage_type: str, status: str = "COMPLETED") -> dict[str, Any]:
        """Claim one task of the type and report it; the task must be there."""
        task = await self.dequeue(stage_type)
        assert task is not None, f"no task of type {stage_type} was claimable"
        return await self.report(task["id"], status)
