"""0016 (after 0015), 2026-11-28: a stage's tasks indexed in their order.

A page of a stage's tasks (`GET /v1/stages/{id}/tasks`, the dashboard's job page) is
ordered by `seq`. With `stage_id` alone indexed, PostgreSQL took the primary key in
order and filtered it: 1.8 s for the first page of a stage among ten million tasks,
whose rows came last. `(stage_id, seq)` answers it from the stage's first entries and
serves all that `stage_id` alone did (the foreign key's cascade, counts).

On PostgreSQL the index is built and the old one dropped CONCURRENTLY, outside the
migration's transaction: a large tasks table keeps taking writes meanwhile.
"""

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"


def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.create_index(
            "ix_tasks_stage_id_seq",
            "tasks",
            ["stage_id", "seq"],
            postgresql_concurrently=True,
            if_not_exists=True,
        )
        op.drop_index(
            "ix_tasks_stage_id", table_name="tasks", postgresql_concurrently=True, if_exists=True
        )


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.create_index("ix_tasks_stage_id", "tasks", ["stage_id"], postgresql_concurrently=True)
        op.drop_index("ix_tasks_stage_id_seq", table_name="tasks", postgresql_concurrently=True)
