"""Log lines as JSON or text, carrying the ids of the job, stage and task they are about:
`jobnik_protocol.logs`, the format the manager writes too, offered here to handlers.

    from jobnik_sdk.logs import configure_logging, log_context

    configure_logging("INFO", "json")  # or fmt=None: env JOBNIK_LOG_FORMAT, text by default
    with log_context(job_id=job.id):
        logging.getLogger("app").info("submitted")
"""

from jobnik_protocol.logs import *  # noqa: F403
from jobnik_protocol.logs import __all__ as __all__
