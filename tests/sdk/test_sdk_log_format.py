"""jobnik_sdk.logs: JSON lines that parse one by one and carry the ids of the current
log context and of the record; text by default; uvicorn's lines in the same format."""

from __future__ import annotations

import io
import json
import logging
import logging.config
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from jobnik_sdk import JobStatus, NewStage, NewTask, TaskContext, Worker
from jobnik_sdk.logs import (
    TEXT_FORMAT,
    JsonFormatter,
    configure_logging,
    current_log_context,
    log_context,
    uvicorn_log_config,
)
from jobnik_sdk.testing import FakeJobnik

from .conftest import QUICK


@pytest.fixture
def root_logging() -> Iterator[None]:
    """Put the root logger's handlers and level back as they were."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_carry_the_context_ids_and_the_records(root_logging: None) -> None:
    stream = io.StringIO()
    formatter = configure_logging("DEBUG", "json", stream=stream)
    assert isinstance(formatter, JsonFormatter)
    log = logging.getLogger("tests.log_format")
    log.info("outside")
    with log_context(job_id="j-1", stage_id=None):
        with log_context(task_id="t-1", attempt=2):
            assert current_log_context() == {"job_id": "j-1", "task_id": "t-1", "attempt": 2}
            log.warning("inside %s", "both", extra={"lease_id": "l-1", "task_id": "t-2"})
        try:
            raise ValueError("broken\nline")
        except ValueError:
            log.exception("failed")
    assert current_log_context() == {}

    outside, inside, failed = lines(stream)
    assert outside["message"] == "outside" and outside["level"] == "INFO"
    assert outside["logger"] == "tests.log_format"
    assert outside["time"].endswith("Z") and "T" in outside["time"]
    assert not {"job_id", "task_id", "stage_id"} & outside.keys()
    assert inside["message"] == "inside both"
    # The record's own ids win over the context's; None values are dropped.
    assert inside["job_id"] == "j-1" and inside["task_id"] == "t-2"
    assert inside["lease_id"] == "l-1" and inside["attempt"] == 2
    assert "stage_id" not in inside
    assert failed["job_id"] == "j-1" and "task_id" not in failed
    assert "ValueError: broken" in failed["exc_info"]


def test_text_is_the_default(root_logging: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBNIK_LOG_FORMAT", raising=False)
    stream = io.StringIO()
    formatter = configure_logging(stream=stream)
    assert not isinstance(formatter, JsonFormatter)
    assert formatter._fmt == TEXT_FORMAT
    with log_context(job_id="j-1"):
        logging.getLogger("tests.log_format").info("hello %d", 1)
    assert stream.getvalue().rstrip().endswith("INFO tests.log_format: hello 1")


def test_the_env_chooses_json_and_a_second_call_replaces_the_handler(
    root_logging: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBNIK_LOG_FORMAT", "JSON")
    first, second = io.StringIO(), io.StringIO()
    configure_logging(stream=first)
    assert isinstance(configure_logging(logging.INFO, stream=second), JsonFormatter)
    logging.getLogger("tests.log_format").info("once")
    assert first.getvalue() == ""
    assert [line["message"] for line in lines(second)] == ["once"]


def test_bad_settings_are_refused(root_logging: None) -> None:
    with pytest.raises(ValueError, match="log format"):
        configure_logging(fmt="xml")
    with pytest.raises(ValueError, match="log level"):
        configure_logging("LOUD")


@pytest.fixture
def uvicorn_loggers() -> Iterator[None]:
    """Put uvicorn's loggers back as they were after dictConfig changed them."""
    names = ("uvicorn", "uvicorn.error", "uvicorn.access")
    saved = {
        name: (list(log.handlers), log.level, log.propagate)
        for name in names
        if (log := logging.getLogger(name))
    }
    yield
    for name, (handlers, level, propagate) in saved.items():
        log = logging.getLogger(name)
        log.handlers[:] = handlers
        log.setLevel(level)
        log.propagate = propagate


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_uvicorns_error_and_access_lines_use_the_same_format(
    fmt: str, uvicorn_loggers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)  # the config's handler resolves it now
    logging.config.dictConfig(uvicorn_log_config("info", fmt))
    logging.getLogger("uvicorn.error").info("Started server process [%d]", 7)
    access = ("127.0.0.1:5000", "GET", "/v1/jobs?page=2", "1.1", 200)
    logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/%s" %d', *access)
    logging.getLogger("uvicorn.access").debug("below the level")
    if fmt == "text":
        text = stream.getvalue().splitlines()
        assert text[0].endswith("INFO uvicorn.error: Started server process [7]")
        request_line = '127.0.0.1:5000 - "GET /v1/jobs?page=2 HTTP/1.1" 200'
        assert text[1].endswith(f"INFO uvicorn.access: {request_line}")
        assert len(text) == 2
        return
    started, request = lines(stream)  # the line below the level is not there
    assert started["logger"] == "uvicorn.error" and started["message"].endswith("[7]")
    assert request["logger"] == "uvicorn.access"
    assert request["message"] == '127.0.0.1:5000 - "GET /v1/jobs?page=2 HTTP/1.1" 200'
    assert (request["client"], request["method"], request["path"], request["status"]) == (
        "127.0.0.1:5000",
        "GET",
        "/v1/jobs?page=2",
        200,
    )


async def test_a_workers_handler_logs_json_lines_with_the_tasks_ids(root_logging: None) -> None:
    fake = FakeJobnik()
    job = await fake.create_job(
        "logged-json", stages=[NewStage(type="json-logged", tasks=[NewTask(data={"n": 1})])]
    )
    stream = io.StringIO()
    configure_logging("INFO", "json", stream=stream)

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        # The handler's own logger, not ctx.logger: the ids come from the log context.
        logging.getLogger("tests.handler").info("rendering %d", data["n"])

    async with Worker(
        fake,
        stage_types="json-logged",
        handler=handler,
        name="json-worker",
        poll_backoff=QUICK,
        handle_signals=False,
    ):
        done = await fake.wait(job.id, timeout=timedelta(seconds=10))
    assert done.status is JobStatus.COMPLETED
    task = (await fake.get_job_stages(job.id, with_tasks=True))[0].tasks[0]  # type: ignore[index]
    logged = lines(stream)
    ids = {
        "task_id": str(task.id),
        "job_id": str(job.id),
        "stage_id": str(task.stage_id),
        "stage_type": "json-logged",
        "worker": "json-worker",
    }
    (mine,) = [line for line in logged if line["logger"] == "tests.handler"]
    assert mine["message"] == "rendering 1"
    assert ids.items() <= mine.items()
    assert mine["lease_id"]
    # The Worker's own lines about the task (started, done) carry them too.
    about_task = [line for line in logged if str(task.id) in line["message"]]
    assert len(about_task) >= 2
    assert all(ids.items() <= line.items() for line in about_task)
    assert all(
        line["worker"] == "json-worker" for line in logged if line["logger"] == "jobnik_sdk.worker"
    )


def test_log_context_as_a_decorator_enters_a_block_per_call() -> None:
    seen: list[dict[str, object]] = []

    @log_context(job_id="j-1")
    def nested(depth: int) -> None:
        seen.append(current_log_context())
        if depth:
            with log_context(task_id=f"t-{depth}"):
                nested(depth - 1)
                seen.append(current_log_context())

    nested(2)
    assert seen == [
        {"job_id": "j-1"},
        {"job_id": "j-1", "task_id": "t-2"},
        {"job_id": "j-1", "task_id": "t-1"},
        {"job_id": "j-1", "task_id": "t-1"},
        {"job_id": "j-1", "task_id": "t-2"},
    ]
    assert current_log_context() == {}
