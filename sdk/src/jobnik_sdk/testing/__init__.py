"""Helpers to test producers and handlers without a manager.

- `FakeJobnik`: the client's calls served from memory, with the manager's rules.
- `make_context(data, ...)`: a TaskContext for a freshly claimed task, as a worker
  would build it, backed by a FakeJobnik.
- `run_handler(handler, data, ...)`: validate `data` as a worker would and run the
  handler once; returns the context so a test can look at what the handler recorded.
"""

from ._builders import make_context, run_handler
from ._fake import FakeJobnik

__all__ = ["FakeJobnik", "make_context", "run_handler"]
