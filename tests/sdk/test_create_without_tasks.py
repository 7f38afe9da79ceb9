"""A create of many tasks may be answered without them: the SDK's `return_tasks=False`
sends `should_return_tasks=false`, the answer's stages carry no tasks (their summaries
count them), and every task is created as ever."""

from __future__ import annotations

from jobnik_sdk import JobnikClient, NewStage, NewTask
from jobnik_sdk.testing import FakeJobnik

from ..support.api import Api, unique


async def test_a_job_and_a_stage_created_without_their_tasks_in_the_answer(
    surface: JobnikClient | FakeJobnik,
) -> None:
    tasks = [NewTask(data={"i": i}) for i in range(50)]
    job = await surface.create_job(
        unique("quiet"), stages=[NewStage(type=unique("quiet"), tasks=tasks)], return_tasks=False
    )
    (stage,) = job.stages or []
    assert stage.tasks is None and stage.summary.pending == 50
    added = await surface.add_stage(job.id, unique("quiet-next"), tasks=tasks, return_tasks=False)
    assert added.tasks is None and added.summary.total == 50
    listed = await surface.list_tasks(stage_id=stage.id, page_size=100)
    assert sorted(t.data["i"] for t in listed.items) == list(range(50))
    # Asked for as ever, the answer holds them.
    full = await surface.add_stage(job.id, unique("quiet-last"), tasks=tasks)
    assert full.tasks is not None and len(full.tasks) == 50


async def test_the_query_is_an_extension_a_reference_create_does_not_see(api: Api) -> None:
    body = {
        "name": unique("job"),
        "data": {},
        "stages": [{"type": unique("s"), "data": {}, "tasks": [{"data": {}}, {"data": {}}]}],
    }
    plain = await api.call("POST", "/v1/jobs", 201, json=body)
    assert len(plain["stages"][0]["tasks"]) == 2
    lean = await api.call(
        "POST", "/v1/jobs", 201, json=body, params={"should_return_tasks": "false"}
    )
    assert "tasks" not in lean["stages"][0] and lean["stages"][0]["summary"]["pending"] == 2
    bad = await api.http.post("/v1/jobs", json=body, params={"should_return_tasks": "maybe"})
    assert bad.status_code == 400 and set(bad.json()) >= {"message", "code"}
