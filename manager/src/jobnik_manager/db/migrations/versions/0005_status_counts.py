"""0005 (after 0004), 2026-11-25: what /metrics reads without scanning big tables.

Jobs and stages by status are counted as they change, by triggers, into status_counts:
a scrape sums a few dozen rows whatever the size of the tables. On PostgreSQL each
transaction writes to one of 16 slots of a (entity, status) count (by its transaction
id), so that concurrent transactions seldom wait for one another's count row. A partial
index on the stages that may run lets the scrape sum their task counters by stage type.
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"

_ACTIVE = "status IN ('PENDING', 'IN_PROGRESS')"
_TABLES = {"jobs": "JOB", "stages": "STAGE"}
# status_counts' columns: (name, type, nullable).
COLUMNS: list[tuple[str, Any, bool]] = [
    ("entity", sa.String(8), False),
    ("status", sa.String(16), False),
    ("slot", sa.SmallInteger(), False),
    ("n", sa.BigInteger(), False),
]

_PG_FUNCTION = """
CREATE FUNCTION jobnik_count_status() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    my_slot smallint := (txid_current() % 16)::smallint;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO status_counts AS c VALUES (TG_ARGV[0], OLD.status, my_slot, -1)
        ON CONFLICT (entity, status, slot) DO UPDATE SET n = c.n - 1;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO status_counts AS c VALUES (TG_ARGV[0], NEW.status, my_slot, 1)
        ON CONFLICT (entity, status, slot) DO UPDATE SET n = c.n + 1;
    END IF;
    RETURN NULL;
END
$$
"""


def _count(entity: str, status: str, delta: int) -> str:
    return (
        f"INSERT INTO status_counts (entity, status, slot, n) VALUES ('{entity}', {status}, 0, "
        f"{delta}) ON CONFLICT (entity, status, slot) DO UPDATE SET n = n + ({delta});"
    )


def upgrade() -> None:
    columns = [sa.Column(name, kind, nullable=null) for name, kind, null in COLUMNS]
    key = sa.PrimaryKeyConstraint("entity", "status", "slot", name="pk_status_counts")
    op.create_table("status_counts", *columns, key)
    op.create_index(
        "ix_stages_active",
        "stages",
        ["type"],
        postgresql_where=sa.text(_ACTIVE),
        sqlite_where=sa.text(_ACTIVE),
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        op.execute(_PG_FUNCTION)
    for table, entity in _TABLES.items():
        # What is there already, then every change from here on.
        op.execute(
            f"INSERT INTO status_counts (entity, status, slot, n) "
            f"SELECT '{entity}', status, 0, count(*) FROM {table} GROUP BY status"
        )
        if postgres:
            run = f"EXECUTE FUNCTION jobnik_count_status('{entity}')"
            op.execute(
                f"CREATE TRIGGER {table}_counted AFTER INSERT OR DELETE ON {table} "
                f"FOR EACH ROW {run}"
            )
            op.execute(
                f"CREATE TRIGGER {table}_status_counted AFTER UPDATE OF status ON {table} "
                f"FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) {run}"
            )
        else:
            op.execute(
                f"CREATE TRIGGER {table}_inserted_counted AFTER INSERT ON {table} "
                f"BEGIN {_count(entity, 'NEW.status', 1)} END"
            )
            op.execute(
                f"CREATE TRIGGER {table}_deleted_counted AFTER DELETE ON {table} "
                f"BEGIN {_count(entity, 'OLD.status', -1)} END"
            )
            op.execute(
                f"CREATE TRIGGER {table}_status_counted AFTER UPDATE OF status ON {table} "
                f"WHEN OLD.status IS NOT NEW.status "
                f"BEGIN {_count(entity, 'OLD.status', -1)} {_count(entity, 'NEW.status', 1)} END"
            )


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for table in _TABLES:
        names = (
            ("counted", "status_counted")
            if postgres
            else ("inserted_counted", "deleted_counted", "status_counted")
        )
        for name in names:
            op.execute(
                f"DROP TRIGGER IF EXISTS {table}_{name}" + (f" ON {table}" if postgres else "")
            )
    if postgres:
        op.execute("DROP FUNCTION IF EXISTS jobnik_count_status()")
    op.drop_index("ix_stages_active", table_name="stages")
    op.drop_table("status_counts")
