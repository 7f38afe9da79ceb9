"""The OpenAPI document is the truth: schemathesis draws requests from the app's own
document, good and bad, and every answer must be one the document gives for that
operation (status, content type, body, headers), and never a server error.

Slow tier only: building the cases takes seconds, so a run that selects no slow test does
not even collect this module (tests/conftest.py). The plain checks of the document are in
test_openapi_document.py.

Each operation is fuzzed on each backend against a database seeded with a job of two
stages and their tasks, so that path ids sometimes name an entity that exists and the
services' rules, not only the 404s, are reached.
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import hypothesis
import pytest
import schemathesis
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import positive_data_acceptance

from jobnik_manager.app import create_app
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings

# The document as the app serves it; the database behind this app is never opened.
schema = schemathesis.openapi.from_dict(
    create_app(Settings(database_url="sqlite+aiosqlite://", maintenance=False)).openapi()
)
# No text the service documents it refuses (docs/operations.md, Text): NUL characters
# are drawn only as bad input.
schema.config.generation.update(allow_x00=False)

STAGE_TYPE = "fuzz"
ANY_ID = "3fa85f64-5717-4562-b3fc-2c963f66afa6"


@dataclass(frozen=True)
class Fuzzed:
    app: Any
    ids: dict[str, list[str]]  # seeded ids by path parameter name


def _seed(app: Any) -> dict[str, list[str]]:
    """A job of two stages, each with tasks of STAGE_TYPE; their ids by path parameter."""
    with asgi.get_client(app) as client:
        task = {"data": {"n": 1}, "maxAttempts": 2}
        body = {
            "name": "fuzzed",
            "data": {},
            "stages": [
                {"type": STAGE_TYPE, "data": {}, "tasks": [task, task]},
                {"type": STAGE_TYPE, "data": {}, "tasks": [task]},
            ],
        }
        answer = client.post("/v1/jobs", json=body)
        assert answer.status_code == 201, answer.text
        job = answer.json()
    stages = job["stages"]
    return {
        "jobId": [job["id"]],
        "stageId": [st["id"] for st in stages],
        "taskId": [t["id"] for st in stages for t in st["tasks"]],
        "stageType": [STAGE_TYPE],
    }


@pytest.fixture
async def fuzzed(db: Database) -> AsyncIterator[Fuzzed]:
    # The app gets a database of its own: schemathesis runs it on an event loop of its
    # own, and connections are bound to the loop that opened them. `db` empties the
    # tables first.
    app = create_app(Settings(database_url=db.url, maintenance=False))
    try:
        yield Fuzzed(app, _seed(app))
    finally:
        # The lifespans schemathesis started (this app's only) end, and its database
        # with it.
        asgi.shutdown_lifespans()


# About 4,600 requests (20 examples per operation, on two backends): some 45 s of the
# machine's two cores, so it runs with the slow tier, not in every `uv run pytest`.
@pytest.mark.slow
@schema.parametrize()
@hypothesis.settings(
    # Per operation and backend, on top of the examples of the coverage phase (boundary
    # values, each kind of bad input, methods the path does not take): 60 operations in
    # about 40 s on two cores.
    max_examples=20,
    deadline=None,
    derandomize=True,
    # The examples of one operation share the database seeded for it, on purpose; and
    # the document's constraints make some draws slow or rejected.
    suppress_health_check=[
        hypothesis.HealthCheck.function_scoped_fixture,
        hypothesis.HealthCheck.too_slow,
        hypothesis.HealthCheck.filter_too_much,
    ],
)
def test_answers_as_documented(case: Any, fuzzed: Fuzzed) -> None:
    for name, value in list((case.path_parameters or {}).items()):
        if name in fuzzed.ids and (pick := _pick(name, value)) is not None:
            case.path_parameters[name] = fuzzed.ids[name][pick % len(fuzzed.ids[name])]
    wait = case.body.get("waitSeconds") if isinstance(case.body, dict) else None
    if isinstance(wait, int | float) and 0.05 < wait <= 60:
        # A long poll waits as long as it was told to for tasks no one adds.
        case.body["waitSeconds"] = 0.05
    # Every other check runs: no 5xx, the status, content type, headers and body as
    # documented, bad input refused, a 405 with Allow. positive_data_acceptance (a
    # request the document allows is answered 2xx) cannot hold for the v1 API: a
    # well-formed request that the entity's state refuses is answered 400
    # (ILLEGAL_JOB_STATUS_TRANSITION, JOB_NOT_IN_FINITE_STATE, ...), as are rules between
    # fields that the document states in prose (a report's retryAfterSeconds goes with
    # RETRIED only); and integers are taken strictly, where JSON Schema counts 3.0 as one.
    case.call_and_validate(app=fuzzed.app, excluded_checks=[positive_data_acceptance])


def _pick(name: str, value: object) -> int | None:
    """For about half of the valid ids drawn (as the drawn value falls), which seeded
    entity to name instead; None to keep the drawn one. Drawn from the value, not from
    hypothesis: examples of the coverage phase take no strategies of the test's own."""
    if name == "stageType":
        drawn = zlib.crc32(str(value).encode())
    else:
        try:
            drawn = uuid.UUID(str(value)).int
        except ValueError:
            return None  # bad input: kept as drawn
    return drawn // 2 if drawn % 2 else None
