"""A claim that asks for its context answers each claimed task's stage and job as a
read right after the claim gives them, on both backends: on PostgreSQL from the claim's
own statement (a limited type's tasks from a read of their own)."""

from __future__ import annotations

from typing import Any

from ..support.api import Api, unique


async def _claim(api: Api, types: list[str], limit: int) -> dict[str, Any]:
    body = {"stageTypes": types, "limit": limit, "withContext": True}
    answer: dict[str, Any] = await api.call("POST", "/v1/tasks/claim", json=body)
    return answer


def _without_progress(read: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in read.items() if k != "progress"}


async def _as_read(api: Api, answer: dict[str, Any]) -> None:
    """Each stage and job of `answer` is what a GET of it gives now (every field but
    the running progress a read adds), each once, and they are exactly those of the
    claimed tasks."""
    stage_ids = [st["id"] for st in answer["stages"]]
    assert len(stage_ids) == len(set(stage_ids))
    assert set(stage_ids) == {t["stageId"] for t in answer["items"]}
    for st in answer["stages"]:
        read = await api.stage(st["id"])
        assert st == _without_progress(read)
    job_ids = [j["id"] for j in answer["jobs"]]
    assert len(job_ids) == len(set(job_ids))
    assert set(job_ids) == {st["jobId"] for st in answer["stages"]}
    for job in answer["jobs"]:
        assert job == _without_progress(await api.job(job["id"]))


async def test_a_first_claim_answers_the_stages_and_jobs_it_started(api: Api) -> None:
    stage_type = unique("ctx")
    jobs = []
    for n in range(3):
        job = await api.create_job(data={"n": n})
        stage = await api.create_stage(job["id"], type=stage_type)
        await api.create_tasks(stage["id"], 2)
        jobs.append(job)
    first = await _claim(api, [stage_type], 3)  # two stages, one of them taken in part
    assert len(first["items"]) == 3
    assert {st["status"] for st in first["stages"]} == {"IN_PROGRESS"}
    assert {j["status"] for j in first["jobs"]} == {"IN_PROGRESS"}
    await _as_read(api, first)
    rest = await _claim(api, [stage_type], 10)  # one stage started already, one not
    assert len(rest["items"]) == 3
    await _as_read(api, rest)
    assert {j["id"] for j in first["jobs"]} | {j["id"] for j in rest["jobs"]} == {
        j["id"] for j in jobs
    }


async def test_a_claim_with_a_limited_type_answers_its_stages_too(api: Api) -> None:
    plain, limited = unique("plain"), unique("limited")
    await api.call("PUT", f"/v1/stage-types/{limited}/limits", json={"maxInFlight": 1})
    stage_types = {}
    for stage_type in (plain, limited):
        job = await api.create_job()
        stage = await api.create_stage(job["id"], type=stage_type)
        await api.create_tasks(stage["id"], 2)
        stage_types[stage["id"]] = stage_type
    answer = await _claim(api, [plain, limited], 10)
    by_type: dict[str, int] = {}
    for task in answer["items"]:
        stage_type = stage_types[task["stageId"]]
        by_type[stage_type] = by_type.get(stage_type, 0) + 1
    assert by_type == {plain: 2, limited: 1}
    await _as_read(api, answer)
