"""Create lumina_run: what each run used (scenario, context seq range, model) and its outcome.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lumina_app.storage.sql.types import utc_datetime_column_type

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "lumina_run",
        sa.Column("run_id", sa.String(40), primary_key=True),
        sa.Column(
            "conversation_id",
            sa.Integer(),
            sa.ForeignKey("lumina_conversation.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("agent_id", sa.String(128), nullable=False),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("scenario", sa.String(16), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("context_first_seq", sa.Integer(), nullable=True),
        sa.Column("context_last_seq", sa.Integer(), nullable=True),
        sa.Column("context_messages", sa.Integer(), nullable=False),
        sa.Column("user_message_id", sa.Integer(), nullable=True),
        sa.Column("assistant_message_id", sa.Integer(), nullable=True),
        sa.Column("started_at", utc_datetime_column_type(), nullable=False),
        sa.Column("finished_at", utc_datetime_column_type(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )
    op.create_index("ix_lumina_run_conversation_id", "lumina_run", ["conversation_id"])
    op.create_index("ix_lumina_run_status", "lumina_run", ["status"])


def downgrade() -> None:
    # Dropping the table drops its indexes; MariaDB refuses to drop the conversation_id
    # index on its own while the foreign key needs it.
    op.drop_table("lumina_run")
