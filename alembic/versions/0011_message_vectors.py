"""Recall: one embedding per message (float16, base64, the model that made it), removed with
its message.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lumina_app.storage.sql.types import utc_datetime_column_type

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_unicode_ci"}


def upgrade() -> None:
    op.create_table(
        "lumina_message_vector",
        sa.Column(
            "message_id",
            sa.Integer(),
            sa.ForeignKey("lumina_message.id", ondelete="CASCADE"),
            primary_key=True,
            autoincrement=False,
        ),
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("vector", sa.Text(), nullable=False),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        **_MYSQL,
    )
    op.create_index(
        "ix_lumina_message_vector_conversation",
        "lumina_message_vector",
        ["conversation_id", "model"],
    )


def downgrade() -> None:
    op.drop_index("ix_lumina_message_vector_conversation", table_name="lumina_message_vector")
    op.drop_table("lumina_message_vector")
