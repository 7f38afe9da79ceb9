"""Helpers to test producers and handlers without a manager.

- `FakeJobnik()`: a JobnikClient on an in-memory manager (`FakeManager`), which answers
  the manager's REST API by its rules; the client's own HTTP, serialization, error
  mapping and retries run on every call. `fake.clock.advance(...)` moves the fake's
  time on; `fake.transport` puts any JobnikClient on the same manager.
- `make_context(data, ...)`: a TaskContext for a freshly claimed task, as a worker
  would build it, backed by a FakeJobnik.
- `run_handler(handler, data, ...)`: validate `data` as a worker would and run the
  handler once; returns the context so a test can look at what the handler recorded.
"""

from ._builders import make_context, run_handler
from ._clock import FakeClock
from ._fake import FakeJobnik, FakeManager

__all__ = ["FakeClock", "FakeJobnik", "FakeManager", "make_context", "run_handler"]
