"""Long-term memories: short facts about a person, per owner and agent, with where each
came from, its status (active, superseded, deleted), a pin, and an embedding.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lumina_app.storage.sql.types import utc_datetime_column_type

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_unicode_ci"}


def upgrade() -> None:
    op.create_table(
        "lumina_memory",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("agent_id", sa.String(128), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("conversation_uuid", sa.String(36), nullable=True),
        sa.Column("seq", sa.Integer(), nullable=True),
        sa.Column("superseded_by", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(128), nullable=True),
        sa.Column("vector", sa.Text(), nullable=True),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        sa.Column("updated_at", utc_datetime_column_type(), nullable=False),
        **_MYSQL,
    )
    op.create_index(
        "ix_lumina_memory_owner", "lumina_memory", ["owner", "agent_id", "status", "updated_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_lumina_memory_owner", table_name="lumina_memory")
    op.drop_table("lumina_memory")
