"""The worker assembled from its settings: the handler WORKER_HANDLER names, and the
settings that reach the Worker. These tests do not depend on the example handler, so
they hold when it is replaced."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from jobnik_sdk import JobStatus, NewStage, NewTask, TaskContext, TaskStatus
from jobnik_sdk.testing import FakeJobnik
from tile_render_worker.__main__ import main
from tile_render_worker.app import HandlerNotFoundError, build_worker, load_handler
from tile_render_worker.settings import HANDLER, WorkerSettings

STAGE = "app-test"


async def echo(data: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    """A handler of this test's own: what it was given, and where."""
    if data.get("fail"):
        raise RuntimeError("asked to fail")
    return {"data": data, "stage": ctx.stage.type, "attempt": ctx.attempt}


ECHO = f"{echo.__module__}:{echo.__name__}"


def settings(**overrides: object) -> WorkerSettings:
    values: dict[str, object] = {
        "stage_type": STAGE,
        "handler": ECHO,
        "concurrency": 4,
        "poll_initial_seconds": 0.01,
        "poll_max_seconds": 0.05,
        **overrides,
    }
    return WorkerSettings(_env_file=None, **values)  # type: ignore[call-arg,arg-type]


async def test_runs_the_configured_handler_over_a_job() -> None:
    fake = FakeJobnik()
    tasks = [NewTask(data={"n": n}) for n in range(4)]
    job = await fake.create_job("app", stages=[NewStage(type=STAGE, tasks=tasks)])
    failing = await fake.create_job(
        "app-fails", stages=[NewStage(type=STAGE, tasks=[NewTask(data={"fail": True})])]
    )

    worker = build_worker(settings(name="app-test-1", lease_seconds=20, heartbeat_seconds=5), fake)
    async with worker:
        done = await fake.wait(job.id, timeout=timedelta(seconds=10))
        failed = await fake.wait(failing.id, timeout=timedelta(seconds=10))

    assert done.status is JobStatus.COMPLETED
    assert job.stages is not None
    ran = (await fake.list_tasks(stage_id=job.stages[0].id)).items
    assert [t.status for t in ran] == [TaskStatus.COMPLETED] * 4
    assert sorted(t.result["data"]["n"] for t in ran if t.result) == [0, 1, 2, 3]
    assert {t.result["stage"] for t in ran if t.result} == {STAGE}
    assert {t.worker for t in ran} == {"app-test-1"}
    for t in ran:
        assert t.lease_expires_at is not None and t.start_time is not None
        assert timedelta(seconds=19) < t.lease_expires_at - t.start_time <= timedelta(seconds=20)
    assert failed.status is JobStatus.FAILED
    assert failing.stages is not None
    [refused] = (await fake.list_tasks(stage_id=failing.stages[0].id)).items
    assert refused.reason == "RuntimeError: asked to fail"


def test_the_default_handler_is_there(monkeypatch: pytest.MonkeyPatch) -> None:
    # Fails when the handler is renamed or replaced but HANDLER (settings.py) is not.
    monkeypatch.delenv("WORKER_HANDLER", raising=False)
    assert WorkerSettings(_env_file=None).handler == HANDLER  # type: ignore[call-arg]
    assert callable(load_handler(HANDLER))


def test_a_handler_the_module_lacks_is_named_with_what_it_has() -> None:
    module, _, function = HANDLER.partition(":")
    with pytest.raises(HandlerNotFoundError) as raised:
        load_handler(f"{module}:no_such_handler")
    message = str(raised.value)
    assert f"WORKER_HANDLER='{module}:no_such_handler'" in message
    assert "no function 'no_such_handler'" in message
    assert function in message  # the module's own handler, offered instead


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        ("no_colon_here", "must look like 'module:function'"),
        (":function", "must look like 'module:function'"),
        ("module_that_is_not_there:handle", "there is no module 'module_that_is_not_there'"),
        (f"{echo.__module__}:STAGE", "no function 'STAGE'"),  # there, but not callable
    ],
)
def test_references_that_lead_nowhere_are_refused(reference: str, says: str) -> None:
    with pytest.raises(HandlerNotFoundError, match=says):
        load_handler(reference)


def test_a_module_whose_own_import_fails_shows_that_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "handler_with_a_missing_dependency.py").write_text(
        "import dependency_that_is_not_installed\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="dependency_that_is_not_installed"):
        load_handler("handler_with_a_missing_dependency:handle")
    sys.modules.pop("handler_with_a_missing_dependency", None)


def test_the_process_exits_with_the_reason_when_the_handler_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = HANDLER.partition(":")[0]
    monkeypatch.setenv("WORKER_HANDLER", f"{module}:renamed_away")
    with pytest.raises(SystemExit) as exited:
        main()
    assert str(exited.value).startswith("error: WORKER_HANDLER=")
    assert "no function 'renamed_away'" in str(exited.value)
