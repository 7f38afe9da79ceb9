"""0019 (after 0018), 2026-12-06: no foreign key from events and tasks to their job on
PostgreSQL.

Each row inserted into a table with a foreign key runs a lookup of the row it names,
which also locks that row (FOR KEY SHARE). For `events`, written on every move, that was
most of an insert's cost (a COPY of 20,000 creation events: 360 ms with the key, 120 ms
without) and a lock every worker of a job took on the job's row; for `tasks`, a fifth of
a create's COPY. Both are deleted with their job by explicit statements, and a task's
stage holds it to the job. SQLite keeps its keys (its check is cheap, and dropping one
rebuilds the table and its triggers): nothing changes there.
"""

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"

KEYS = (("fk_events_job_id_jobs", "events"), ("fk_tasks_job_id_jobs", "tasks"))


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, table in KEYS:
        op.drop_constraint(name, table, type_="foreignkey")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, table in KEYS:
        # Rows of jobs deleted meanwhile would fail the key: they go first.
        op.execute(
            f"DELETE FROM {table} t WHERE NOT EXISTS (SELECT FROM jobs j WHERE j.id = t.job_id)"
        )
        op.create_foreign_key(name, table, "jobs", ["job_id"], ["id"], ondelete="CASCADE")
