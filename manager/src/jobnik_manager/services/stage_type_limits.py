"""Stage-type limits: set, clear and read them, and claim a limited type's tasks within
its limit (domain.limits decides how many).

The fast claim statements skip a limited type. Its tasks are claimed here, one type at
a time, in a transaction that first locks the limit's row: claims of the type queue on
that lock, on every replica, so each sees the tasks in flight that the one before it
claimed (read in a statement of its own, after the lock) and the tokens it left. A task
ending needs no lock: it only makes room. On SQLite the writer's lock does the same.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache
from typing import Any, cast

from sqlalchemy import Table, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.claim import claim_answer, claim_statement
from ..db.engine import Database, now_in, principal_in
from ..db.models import StageTypeLimit
from ..db.sqlite_claim import ClaimAsk, ClaimedRows
from ..db.sqlite_claim import claim as sqlite_claim
from ..db.sqlite_values import Columns
from ..db.upserts import insert_for
from ..domain.limits import Limit, allowance, default_burst, spent
from ..domain.statuses import StageStatus

# Stages whose tasks may be in flight: the counters the stage-types view sums too, read
# through the partial index of such stages (its predicate written out, as a plan kept for
# the statement only uses the index for the statuses it names).
_MAY_RUN = [StageStatus.PENDING.value, StageStatus.IN_PROGRESS.value]
_IN_FLIGHT_OF = (
    "SELECT coalesce(sum(in_progress), 0) FROM stages "
    "WHERE type = {type} AND status IN ({statuses})".format(
        type="{type}", statuses=", ".join(f"'{status}'" for status in _MAY_RUN)
    )
)


@dataclass(frozen=True, slots=True)
class LimitSpec:
    max_in_flight: int | None
    rate: float | None
    burst: int | None


async def set_limit(s: AsyncSession, stage_type: str, spec: LimitSpec) -> StageTypeLimit:
    """Set (or replace) the type's limits; its bucket starts full."""
    now = now_in(s)
    burst = spec.burst if spec.burst is not None else default_burst(spec.rate)
    Limit(stage_type, spec.max_in_flight, spec.rate, burst, burst, now)  # checks the values
    values = {
        "max_in_flight": spec.max_in_flight,
        "rate": spec.rate,
        "burst": burst,
        "tokens": float(burst),
        "refilled_at": now,
        "set_at": now,
        "principal": principal_in(s),
    }
    stmt = insert_for(s, StageTypeLimit.__table__).values(type=stage_type, **values)
    await s.execute(stmt.on_conflict_do_update(index_elements=["type"], set_=values))
    found = await s.get(StageTypeLimit, stage_type, populate_existing=True)
    assert found is not None
    return found


async def clear_limit(s: AsyncSession, stage_type: str) -> None:
    await s.execute(delete(StageTypeLimit).where(StageTypeLimit.type == stage_type))


async def limits(s: AsyncSession) -> dict[str, StageTypeLimit]:
    return {r.type: r for r in (await s.execute(select(StageTypeLimit))).scalars()}


@dataclass(frozen=True, slots=True)
class LimitedClaim:
    rows: list[Any]  # as the claim statement answers them
    retry_after: float | None  # seconds until the limit may allow more, when it held some back


def _limit(row: Any) -> Limit:
    return Limit(
        row["type"],
        row["max_in_flight"],
        row["rate"],
        row["burst"],
        row["tokens"],
        _aware(row["refilled_at"]),
    )


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


_LOCK = "SELECT * FROM stage_type_limits WHERE type = $1 FOR UPDATE"
_IN_FLIGHT = _IN_FLIGHT_OF.format(type="$1")
_SPEND = "UPDATE stage_type_limits SET tokens = $2, refilled_at = $3 WHERE type = $1"


async def claim_limited_postgres(
    db: Database, stage_type: str, limit: int, params: dict[str, Any], announce: bool
) -> LimitedClaim:
    """PostgreSQL: up to `limit` tasks of the limited `stage_type`, within its limit.
    `params` are the claim statement's (its `now` the time of the claim)."""
    async with db.direct_transaction() as conn:
        row = await conn.fetchrow(_LOCK, stage_type)
        if row is None:  # cleared meanwhile: the fast claim hands it out next time
            return LimitedClaim([], 0.0)
        # The claim's time is read again once the type's lock is held: it counts what is
        # in flight now, so its events must not be dated from before a wait for the lock
        # (the event log would show it overlapping tasks that ended while it waited).
        now: datetime = db.clock.now()
        lease = params["expires"] - params["now"]
        params = params | {"now": now, "expires": now + lease, "time": now.isoformat()}
        in_flight = int(await conn.fetchval(_IN_FLIGHT, stage_type))
        allowed = allowance(_limit(row), in_flight, now, limit)
        rows: list[Any] = []
        if allowed.n > 0:
            statement = claim_statement(True, announce, limited=True)
            rows, _ = claim_answer(
                await conn.fetch(
                    statement.sql, *statement.args(params | {"types": stage_type, "n": allowed.n})
                )
            )
        await conn.execute(_SPEND, stage_type, spent(allowed, len(rows)), now)
        return LimitedClaim(rows, allowed.retry_after)


def claim_limited_sqlite(
    conn: sqlite3.Connection, ask: ClaimAsk
) -> tuple[ClaimedRows, float | None]:
    """SQLite, inside the writer's transaction after the fast claim: the limited types
    among `ask`'s, each within its limit, while `ask.limit` is not reached. Answers the
    rows claimed and, when a limit allowed none, when to look again."""
    table = _limits_table()
    found = conn.execute(
        "SELECT * FROM stage_type_limits "
        "WHERE type IN (SELECT value FROM json_each(?)) ORDER BY type",
        (json.dumps(list(ask.stage_types)),),
    )
    claimed = ClaimedRows()
    retry_after: float | None = None
    left = ask.limit
    for row in table.rows(found):
        if left <= 0:
            break
        (in_flight,) = conn.execute(_IN_FLIGHT_OF.format(type="?"), (row["type"],)).fetchone()
        allowed = allowance(_limit(row), int(in_flight), ask.now, left)
        more = ClaimedRows()
        if allowed.n > 0:
            one = replace(ask, stage_types=(row["type"],), limit=allowed.n)
            more = sqlite_claim(conn, one, limited=True)
        if allowed.retry_after is not None:
            retry_after = min(retry_after or allowed.retry_after, allowed.retry_after)
        conn.execute(
            "UPDATE stage_type_limits SET tokens = ?, refilled_at = ? WHERE type = ?",
            (spent(allowed, len(more.tasks)), table.bind("refilled_at", ask.now), row["type"]),
        )
        claimed.tasks += more.tasks
        claimed.stages += more.stages
        claimed.jobs += more.jobs
        claimed.started = claimed.started or more.started
        left -= len(more.tasks)
    return claimed, retry_after


@cache
def _limits_table() -> Columns:
    return Columns(cast(Table, StageTypeLimit.__table__))
