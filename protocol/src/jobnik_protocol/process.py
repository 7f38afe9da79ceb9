"""What a long-running manager or worker process sets for itself.

Both make and drop thousands of objects per request or claim (rows, answers, models,
reports). Python's collector looks at the youngest of them every 700 allocations by
default: collecting took about a tenth of a manager's read and a sixth of a worker's
CPU per task (docs/performance.md). Looked at every 10,000 allocations, the same garbage
goes, in fewer passes.
"""

from __future__ import annotations

import gc

# Allocations between two collections of the youngest generation (Python's default: 700).
YOUNG_COLLECTION_EVERY = 10_000


def tune_gc() -> None:
    """Collect the youngest generation every `YOUNG_COLLECTION_EVERY` allocations; the
    older generations' thresholds stay as they are. Once, as the process starts."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, older, oldest)
