"""0007 (after 0006), 2026-11-26: a stage's running progress kept as a counter.

A stage's progress is its completed tasks and the progress its running tasks last
reported; the second part was summed over the stage's IN_PROGRESS tasks on every read,
a walk whose cost grew with the stage (and, on a table PostgreSQL had not analysed yet,
read every index entry of the stage). `stages.running_progress` now holds that sum,
kept by a trigger on tasks: whatever path moves a task or records its progress (the
ORM, the hot statements, the reaper, a cascade), the database adds the change. The
trigger fires only for a task that is or was IN_PROGRESS with some progress, so the
claims and completions of tasks that never report progress do not pay for it.
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"

# A task's share of its stage's running progress.
_PG_SHARE = "CASE WHEN {row}.status = 'IN_PROGRESS' THEN COALESCE({row}.progress, 0) ELSE 0 END"
_PG_FUNCTION = f"""
CREATE FUNCTION jobnik_running_progress() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.stage_id = NEW.stage_id THEN
        UPDATE stages
        SET running_progress = running_progress
            + ({_PG_SHARE.format(row="NEW")}) - ({_PG_SHARE.format(row="OLD")})
        WHERE id = NEW.stage_id;
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        UPDATE stages SET running_progress = running_progress - ({_PG_SHARE.format(row="OLD")})
        WHERE id = OLD.stage_id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        UPDATE stages SET running_progress = running_progress + ({_PG_SHARE.format(row="NEW")})
        WHERE id = NEW.stage_id;
    END IF;
    RETURN NULL;
END
$$
"""


def _counts(row: str) -> str:
    """Whether a task row holds a share of running progress (a WHEN condition)."""
    return f"({row}.status = 'IN_PROGRESS' AND {row}.progress IS NOT NULL AND {row}.progress <> 0)"


def _sqlite_change(row: str, sign: str) -> str:
    return (
        f"UPDATE stages SET running_progress = running_progress {sign} {row}.progress "
        f"WHERE id = {row}.stage_id AND {_counts(row)};"
    )


def upgrade() -> None:
    op.add_column(
        "stages",
        sa.Column("running_progress", sa.BigInteger(), nullable=False, server_default="0"),
    )
    # What is there already, then every change from here on.
    op.execute(
        "UPDATE stages SET running_progress = COALESCE((SELECT SUM(t.progress) FROM tasks t "
        "WHERE t.stage_id = stages.id AND t.status = 'IN_PROGRESS'), 0)"
    )
    changed = (
        "(OLD.status IS DISTINCT FROM NEW.status OR OLD.progress IS DISTINCT FROM NEW.progress)"
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        run = "EXECUTE FUNCTION jobnik_running_progress()"
        op.execute(
            f"CREATE TRIGGER tasks_running_progress AFTER UPDATE OF status, progress ON tasks "
            f"FOR EACH ROW WHEN ({changed} AND ({_counts('OLD')} OR {_counts('NEW')})) {run}"
        )
        op.execute(
            f"CREATE TRIGGER tasks_inserted_running_progress AFTER INSERT ON tasks "
            f"FOR EACH ROW WHEN {_counts('NEW')} {run}"
        )
        op.execute(
            f"CREATE TRIGGER tasks_deleted_running_progress AFTER DELETE ON tasks "
            f"FOR EACH ROW WHEN {_counts('OLD')} {run}"
        )
        return
    sqlite_changed = "(OLD.status IS NOT NEW.status OR OLD.progress IS NOT NEW.progress)"
    op.execute(
        f"CREATE TRIGGER tasks_running_progress AFTER UPDATE OF status, progress ON tasks "
        f"WHEN {sqlite_changed} AND ({_counts('OLD')} OR {_counts('NEW')}) "
        f"BEGIN {_sqlite_change('OLD', '-')} {_sqlite_change('NEW', '+')} END"
    )
    op.execute(
        f"CREATE TRIGGER tasks_inserted_running_progress AFTER INSERT ON tasks "
        f"WHEN {_counts('NEW')} BEGIN {_sqlite_change('NEW', '+')} END"
    )
    op.execute(
        f"CREATE TRIGGER tasks_deleted_running_progress AFTER DELETE ON tasks "
        f"WHEN {_counts('OLD')} BEGIN {_sqlite_change('OLD', '-')} END"
    )


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for name in ("running_progress", "inserted_running_progress", "deleted_running_progress"):
        op.execute(f"DROP TRIGGER IF EXISTS tasks_{name}" + (" ON tasks" if postgres else ""))
    if postgres:
        op.execute("DROP FUNCTION IF EXISTS jobnik_running_progress()")
    with op.batch_alter_table("stages") as batch:
        batch.drop_column("running_progress")
