"""The migrations build the schema the models describe: nothing for autogenerate to add."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Base


def _differences(conn: Connection) -> list[object]:
    context = MigrationContext.configure(conn, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


async def test_the_models_match_the_migrated_schema(db: Database) -> None:
    async with db.engine.connect() as conn:
        assert await conn.run_sync(_differences) == []
