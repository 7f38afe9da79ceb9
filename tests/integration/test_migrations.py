"""The migrations build the schema the models describe: nothing for autogenerate to add."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Base


def _differences(conn: Connection) -> list[object]:
    dialect = conn.dialect.name

    def of_this_database(obj: Any, *_: Any) -> bool:
        # An index a model declares for one backend (`Index(...).ddl_if(dialect=...)`)
        # is not looked for on another; autogenerate does not read the condition.
        condition = getattr(obj, "_ddl_if", None)
        return condition is None or condition.dialect in (None, dialect)

    opts = {"compare_type": True, "include_object": of_this_database}
    context = MigrationContext.configure(conn, opts=opts)
    return list(compare_metadata(context, Base.metadata))


async def test_the_models_match_the_migrated_schema(db: Database) -> None:
    async with db.engine.connect() as conn:
        assert await conn.run_sync(_differences) == []
