"""How a Worker asks for work: one batch claim per group of up to 20 stage types, the
groups taken in turn, and a long poll while nothing is ready when the manager takes one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta

from ._client import ConsumerClient
from ._exceptions import (
    ApiError,
    AuthenticationError,
    JobnikTransportError,
    JobnikValidationError,
    PermissionDeniedError,
)
from ._logs import Log
from ._models import Job, Stage, Task

# What one batch claim may ask for, by the manager's limits.
MAX_CLAIM = 100
MAX_CLAIM_TYPES = 20


class Claimer:
    """Claims tasks of `stage_types` under `lease`, in the worker's `name`.

    Claims ask for the tasks' stages and jobs too, handed to `on_context`.
    A claim that may `wait` is a long poll of up to `wait`; that needs the worker's
    types to fit in one claim (20 of them), as a claim held for one group would keep
    the others waiting. An older manager refuses the long poll as a malformed request;
    when the same claim goes through without it, the worker polls from then on.

    A claim the manager refuses for the worker's token (401, 403) raises: claiming
    again cannot succeed, so the worker stops.
    """

    def __init__(
        self,
        client: ConsumerClient,
        stage_types: Sequence[str],
        *,
        lease: timedelta,
        name: str,
        wait: timedelta,
        log: Log,
        on_context: Callable[[list[Stage], list[Job]], None] = lambda stages, jobs: None,
    ) -> None:
        self._client = client
        self._groups = [
            list(stage_types[i : i + MAX_CLAIM_TYPES])
            for i in range(0, len(stage_types), MAX_CLAIM_TYPES)
        ]
        self._lease = lease
        self._name = name
        self._wait = wait if wait > timedelta(0) and len(self._groups) == 1 else None
        self._log = log
        self._on_context = on_context
        self._with_context = True
        self._next_group = 0
        self._refused = False
        # After the last `claim`: how soon a stage type's limit lets more out, when it
        # held tasks back (the manager's `retryAfterSeconds`); None otherwise.
        self.held_back: timedelta | None = None

    @property
    def long_polls(self) -> bool:
        """Whether a claim may wait for work."""
        return self._wait is not None

    async def claim(self, limit: int, *, wait: bool = False) -> list[Task]:
        """One claim per group of stage types until one yields tasks, starting after
        the group served last; an empty list when none did (or the manager could not
        be asked). Raises AuthenticationError or PermissionDeniedError when the manager
        refuses the worker's token."""
        count = len(self._groups)
        self.held_back = None
        for offset in range(count):
            index = (self._next_group + offset) % count
            group = self._groups[index]
            try:
                tasks = await self._claim(group, limit, self._wait if wait else None)
            except (AuthenticationError, PermissionDeniedError) as exc:
                if not self._refused:  # claims in flight together are refused together
                    self._refused = True
                    self._log.error("the manager refused this worker's token: %s", exc)
                raise
            except (JobnikTransportError, ApiError) as exc:
                self._log.warning("claiming %s tasks failed: %s", group, exc)
                continue
            if tasks:
                self._next_group = (index + 1) % count
                return tasks
        return []

    async def _claim(self, group: list[str], limit: int, wait: timedelta | None) -> list[Task]:
        # A manager refuses what it does not know as a malformed request, so nothing was
        # claimed: ask again without the context, then without the wait.
        while True:
            try:
                return await self._ask(group, limit, wait)
            except JobnikValidationError:
                if self._with_context:
                    self._with_context = False
                    self._log.info(
                        "the manager does not answer claims with their context; "
                        "reading jobs and stages instead"
                    )
                elif wait is not None:
                    wait = self._wait = None
                    self._log.info(
                        "the manager does not hold claims open (waitSeconds); polling instead"
                    )
                else:
                    raise

    async def _ask(self, group: list[str], limit: int, wait: timedelta | None) -> list[Task]:
        if not self._with_context:
            return await self._client.claim(
                group, limit=limit, lease=self._lease, worker=self._name, wait=wait
            )
        claimed = await self._client.claim_with_context(
            group, limit=limit, lease=self._lease, worker=self._name, wait=wait
        )
        self._on_context(claimed.stages, claimed.jobs)
        if claimed.retry_after_seconds is not None:
            hint = timedelta(seconds=claimed.retry_after_seconds)
            self.held_back = hint if self.held_back is None else min(self.held_back, hint)
        return claimed.items
