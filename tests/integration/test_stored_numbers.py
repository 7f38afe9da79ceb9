"""JSON numbers come back as they were stored, however large, on every read path."""

from __future__ import annotations

from ..support.api import Api, unique

HUGE = 123456789012345678901234567890  # beyond 64 bits: no float holds it exactly
VALUES = {"huge": HUGE, "negative": -HUGE, "small": 7, "ratio": 0.5, "id": "1234567890123456789012"}


async def test_integers_beyond_64_bits_are_read_back_exactly(api: Api) -> None:
    job = await api.create_job(data=VALUES)
    stage_type = unique("numbers")
    stage = await api.create_stage(job["id"], type=stage_type)
    [created] = await api.create_tasks(stage["id"], 1, userMetadata=VALUES)
    assert (await api.job(job["id"]))["data"] == VALUES
    claimed = await api.dequeue(stage_type)
    assert claimed is not None and claimed["id"] == created["id"]
    assert claimed["userMetadata"] == VALUES
    done = await api.call(
        "PUT", f"/v1/tasks/{claimed['id']}/status", json={"status": "COMPLETED", "result": VALUES}
    )
    assert done["result"] == VALUES
    read = await api.call("GET", f"/v1/tasks/{claimed['id']}")
    assert (read["userMetadata"], read["result"]) == (VALUES, VALUES)


async def test_a_claim_with_its_context_reads_them_back_exactly(api: Api) -> None:
    job = await api.create_job(data=VALUES)
    stage_type = unique("numbers")
    stage = await api.create_stage(job["id"], type=stage_type)
    await api.create_tasks(stage["id"], 2)
    answer = await api.call(
        "POST",
        "/v1/tasks/claim",
        json={"stageTypes": [stage_type], "limit": 5, "withContext": True},
    )
    assert len(answer["items"]) == 2
    assert [s["id"] for s in answer["stages"]] == [stage["id"]]
    assert [j["id"] for j in answer["jobs"]] == [job["id"]]
    assert answer["jobs"][0]["data"] == VALUES
    assert answer["stages"][0]["status"] == "IN_PROGRESS"
    plain = await api.call("POST", "/v1/tasks/claim", json={"stageTypes": [stage_type]})
    assert plain == {"items": []}, "nothing left, and no context keys without withContext"


async def test_a_stage_percentage_is_floored_on_every_path(api: Api) -> None:
    """Two of three tasks done is 66 %, whether the completions left the stage open (on
    PostgreSQL, one statement of their own) or not."""
    _, stage, _ = await api.one_stage_job(unique("pct"), tasks=3)
    claimed = [await api.dequeue(stage["type"]) for _ in range(3)]
    for task in claimed[:2]:
        assert task is not None
        await api.report(task["id"], "COMPLETED")
    assert (await api.stage(stage["id"]))["percentage"] == 66
