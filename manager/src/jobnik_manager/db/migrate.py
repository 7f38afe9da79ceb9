"""Apply the Alembic history programmatically (the CLI's `migrate`, and `serve` on SQLite),
and tell whether a database is at its latest revision."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    # ConfigParser interpolation would choke on a '%' in a password.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at `url`. Must be called outside a running event loop."""
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


@cache
def head() -> str:
    """The latest revision of the migrations this code carries."""
    revision = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert revision is not None
    return revision


async def current(engine: AsyncEngine) -> str | None:
    """The revision the database is at; None when it was never migrated. Raises as the
    driver does when the database cannot be reached."""
    async with engine.connect() as conn:
        try:
            return (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        except DBAPIError as exc:
            if _no_such_table(exc):
                return None
            raise


def _no_such_table(exc: DBAPIError) -> bool:
    message = str(exc.orig).lower()
    return "alembic_version" in message and ("does not exist" in message or "no such" in message)


def behind_message(url_name: str, at: str | None, latest: str) -> str:
    """One line for an operator: what the database is at and the command to run."""
    state = "has never been migrated" if at is None else f"is at revision {at}"
    return (
        f"database {url_name} {state}, not at the latest revision {latest}: run "
        "`jobnik-manager migrate` (or set JOBNIK_AUTO_MIGRATE=true to migrate on start)"
    )
