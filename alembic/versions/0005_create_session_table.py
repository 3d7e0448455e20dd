"""Create lumina_session: signed-in browsers (a token hash per session, never the token).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lumina_app.storage.sql.types import utc_datetime_column_type

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "lumina_session",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        sa.Column("expires_at", utc_datetime_column_type(), nullable=False),
        sa.Column("last_seen_at", utc_datetime_column_type(), nullable=False),
        sa.Column("user_agent", sa.String(255), nullable=False),
        sa.Column("client_ip", sa.String(64), nullable=False),
        sa.Column("revoked_at", utc_datetime_column_type(), nullable=True),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_unicode_ci",
    )
    op.create_index("ix_lumina_session_owner", "lumina_session", ["owner"])
    op.create_index("ix_lumina_session_user_id", "lumina_session", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_lumina_session_user_id", table_name="lumina_session")
    op.drop_index("ix_lumina_session_owner", table_name="lumina_session")
    op.drop_table("lumina_session")
