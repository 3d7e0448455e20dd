"""Create lumina_idempotency: Idempotency-Key → first response, per owner.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lumina_app.storage.sql.types import utc_datetime_column_type

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "lumina_idempotency",
        sa.Column("owner", sa.String(128), primary_key=True),
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("response", sa.JSON(), nullable=True),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )
    op.create_index("ix_lumina_idempotency_created_at", "lumina_idempotency", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_lumina_idempotency_created_at", table_name="lumina_idempotency")
    op.drop_table("lumina_idempotency")
