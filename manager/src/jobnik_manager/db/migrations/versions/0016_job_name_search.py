"""0016 (after 0015), 2026-11-28: a search by part of a job's name.

On PostgreSQL, the name's trigrams (pg_trgm, a trusted extension a database's owner may
create) in a GIN index, which serves `ILIKE '%text%'` from three characters. SQLite has
no such index: it reads the table.
"""

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.create_index(
        "ix_jobs_name_trgm",
        "jobs",
        ["name"],
        postgresql_using="gin",
        postgresql_ops={"name": "gin_trgm_ops"},
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_jobs_name_trgm", table_name="jobs")
