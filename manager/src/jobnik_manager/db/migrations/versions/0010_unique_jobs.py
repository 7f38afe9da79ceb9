"""0010 (after 0009), 2026-11-27: unique jobs.

A job may be created with a unique key: `unique_job_keys` says which job holds each key
and until when (null: while that job is not final); `jobs.unique_key` keeps the key the
job was created with, for its answers.
"""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import UtcDateTime

revision: str = "0010"
down_revision: str | None = "0009"


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("unique_key", sa.String(255), nullable=True))
    op.create_table(
        "unique_job_keys",
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("expires_at", UtcDateTime, nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_unique_job_keys_job_id_jobs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("key", name="pk_unique_job_keys"),
    )
    op.create_index("ix_unique_job_keys_job_id", "unique_job_keys", ["job_id"])


def downgrade() -> None:
    op.drop_index("ix_unique_job_keys_job_id", table_name="unique_job_keys")
    op.drop_table("unique_job_keys")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("unique_key")
