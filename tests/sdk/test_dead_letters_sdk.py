"""Dead letters from the SDK: a task failed for good is listed with its failed attempts,
retried (its job replayed) or discarded, by id or by stage type. Against the FakeJobnik
and the manager on PostgreSQL."""

from __future__ import annotations

from jobnik_sdk import JobStatus, NewStage, NewTask, TaskStatus

from ..support.api import unique
from .conftest import Surface


async def fail_for_good(surface: Surface, kind: str, *reasons: str) -> tuple[object, object]:
    job = await surface.create_job(
        unique("job"), stages=[NewStage(type=kind, tasks=[NewTask(max_attempts=len(reasons))])]
    )
    for reason in reasons:
        (claimed,) = await surface.claim([kind])
        await surface.fail(claimed.id, lease_id=claimed.lease_id, reason=reason)
    return job.id, claimed.id


async def test_listed_with_their_errors_then_retried_or_discarded(surface: Surface) -> None:
    kind = unique("dlq")
    first_job, first = await fail_for_good(surface, kind, "HTTP 502", "HTTP 503")
    _, second = await fail_for_good(surface, kind, "bad input")
    page = await surface.list_dead_letters(stage_type=kind)
    assert page.total == 2
    newest, oldest = page.items
    assert (newest.task.id, oldest.task.id, oldest.job_id) == (second, first, first_job)
    assert oldest.job_status is JobStatus.FAILED and oldest.stage_type == kind
    assert [(e.status, e.attempt, e.reason) for e in oldest.errors] == [
        (TaskStatus.RETRIED, 1, "HTTP 502"),
        (TaskStatus.FAILED, 2, "HTTP 503"),
    ]

    discarded = await surface.discard_dead_letters([second])
    assert (discarded.tasks, discarded.skipped) == ([second], [])
    retried = await surface.retry_dead_letters(stage_type=kind)
    assert (retried.jobs, retried.tasks) == ([first_job], [first])
    assert (await surface.list_dead_letters(stage_type=kind)).total == 0
    assert (await surface.get_job(first_job)).status is JobStatus.IN_PROGRESS
    again = await surface.retry_dead_letters([second])
    assert [s.code for s in again.skipped] == ["NOT_A_DEAD_LETTER"]
