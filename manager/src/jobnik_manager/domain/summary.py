"""Stage summaries (task counts by status) and the percentages derived from them.

Defined once, in `jobnik_protocol.summary`, for the manager and its clients alike: the
stage table's columns, the API's summary, the counts kept in SQL and the presenters follow
`COUNTERS`.
"""

from jobnik_protocol.rules import percentage
from jobnik_protocol.summary import COUNTERS, Summary, summary_field

__all__ = ["COUNTERS", "Summary", "percentage", "summary_field"]
