"""The scaffold's one error."""

from __future__ import annotations

from .._exceptions import JobnikError


class ScaffoldError(JobnikError):
    """A worker project cannot be written as asked: a bad stage type or name, a target
    directory in use, or an SDK source that cannot be had. The message says which."""
