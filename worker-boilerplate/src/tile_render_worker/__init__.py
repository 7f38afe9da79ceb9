"""A Jobnik worker for one stage type: settings, a handler, and the process that runs it."""
