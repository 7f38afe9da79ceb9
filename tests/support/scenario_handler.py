"""The handler the deployments' template workers run (WORKER_HANDLER): a task's `data`
says what it does, so one worker image serves every scenario of the soak and the
profile tests.

    {"do": "ok", "seconds": 0.1}       work a while, report progress and an event, return
    {"do": "flaky"}                     fail the first attempt, then succeed
    {"do": "exhaust"}                   fail every attempt
    {"do": "doomed"}                    fail for good (NonRetryableError)
    {"do": "later", "until": EPOCH}     "try again later" until that time, then succeed
    {"do": "overrun", "first": S}       the first attempt runs S seconds (past its limit)
    {"do": "fanout", "n": N}            add N tasks to the job's next stage, as the producer
    {"do": "replay"}                    fail for good once; succeed once replayed

A fan-out and a replay call the manager as the producer (SCENARIO_PRODUCER_TOKEN), as a
pipeline's own code would with the token it was given for that.
"""

from __future__ import annotations

import asyncio
import os
import time
from datetime import timedelta
from typing import Any

from jobnik_sdk import JobnikClient, NewTask, NonRetryableError, RetryLaterError, TaskContext

_producer: JobnikClient | None = None


def producer() -> JobnikClient:
    global _producer
    if _producer is None:
        _producer = JobnikClient(
            os.environ["SCENARIO_MANAGER_URL"],
            token=os.environ.get("SCENARIO_PRODUCER_TOKEN") or None,
            timeout=timedelta(seconds=20),
        )
    return _producer


async def handle(data: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    what = data.get("do", "ok")
    await ctx.update_progress(10, message=f"{what}: started")
    if what == "flaky" and ctx.attempt == 1:
        raise RuntimeError("flaky: the first attempt fails")
    if what == "exhaust":
        raise RuntimeError(f"exhaust: attempt {ctx.attempt} fails too")
    if what == "doomed":
        raise NonRetryableError("doomed: this input can never succeed")
    if what == "later" and time.time() < float(data["until"]):
        raise RetryLaterError(timedelta(seconds=1), "later: not ready yet")
    if what == "overrun" and ctx.attempt == 1:
        await asyncio.sleep(float(data.get("first", 5)))
    if what == "replay" and not ctx.task.user_metadata.get("failedOnce"):
        # Marked before failing, so the replayed run knows it may succeed.
        await producer().set_task_user_metadata(ctx.task.id, {"failedOnce": True})
        raise NonRetryableError("replay: fails until an operator replays the job")
    if what == "fanout":
        count = int(data["n"])
        stages = await producer().get_job_stages(ctx.job.id)
        after = next(s for s in stages if s.order == ctx.stage.order + 1)
        # Keyed by the task: a run repeated after a crash adds nothing twice.
        await producer().add_tasks(
            after.id,
            [NewTask(data={"do": "ok", "seconds": 0.05}, max_attempts=20) for _ in range(count)],
            idempotency_key=f"fanout-{ctx.task.id}",
        )
    await asyncio.sleep(float(data.get("seconds", 0.05)))
    await ctx.emit("worked", f"{what} done", attempt=ctx.attempt)
    await ctx.update_progress(100, message=f"{what}: done")
    return {"did": what, "attempt": ctx.attempt}
