"""Helpers to test producers and handlers without a manager to run (the `testing` extra).

- `FakeJobnik()`: a JobnikClient on the manager itself, served in-process on a SQLite
  file of its own (`FakeManager`); the client's own HTTP, serialization, error mapping
  and retries run on every call. `fake.clock.advance(...)` moves the fake's
  time on; `fake.transport` puts any JobnikClient on the same manager.
- `make_context(data, ...)`: a TaskContext for a freshly claimed task, as a worker
  would build it, backed by a FakeJobnik.
- `run_handler(handler, data, ...)`: validate `data` as a worker would and run the
  handler once; returns the context so a test can look at what the handler recorded.
- `run_attempt(handler, data, abort_at_heartbeat=..., lose_lease_at_heartbeat=...,
  cancel_after=..., cancel_at_progress=...)`: run it as a Worker runs an attempt (the
  Worker's own context, heartbeat loop and outcome mapping, on a FakeManager),
  cancelled when the test says: what the Worker would report, the progress, the
  heartbeats and their answers, and the events the handler sent.
"""

from ._attempts import AttemptRun, SentHeartbeat, run_attempt
from ._builders import make_context, run_handler
from ._clock import FakeClock
from ._fake import FakeJobnik, FakeManager

__all__ = [
    "AttemptRun",
    "FakeClock",
    "FakeJobnik",
    "FakeManager",
    "SentHeartbeat",
    "make_context",
    "run_attempt",
    "run_handler",
]
