"""Accounts: lumina_user, lumina_api_key (a hash per key, never the key), lumina_audit;
lumina_session.user_id becomes a foreign key to lumina_user.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

from lumina_app.storage.sql.types import utc_datetime_column_type

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_unicode_ci"}
# Usernames compare byte for byte everywhere (MySQL's table collation would make "Alice"
# find "alice").
_USERNAME = sa.String(64).with_variant(
    mysql.VARCHAR(64, collation="utf8mb4_bin"), "mysql", "mariadb"
)


def upgrade() -> None:
    op.create_table(
        "lumina_user",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("username", _USERNAME, nullable=False, unique=True),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("must_change_password", sa.Boolean(), nullable=False),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        sa.Column("password_changed_at", utc_datetime_column_type(), nullable=False),
        sa.Column("disabled_at", utc_datetime_column_type(), nullable=True),
        **_MYSQL,
    )
    op.create_table(
        "lumina_api_key",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "user_id",
            sa.Integer(),
            sa.ForeignKey("lumina_user.id", ondelete="CASCADE", name="fk_lumina_api_key_user"),
            nullable=False,
        ),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        sa.Column("last_used_at", utc_datetime_column_type(), nullable=True),
        sa.Column("revoked_at", utc_datetime_column_type(), nullable=True),
        **_MYSQL,
    )
    op.create_index("ix_lumina_api_key_user_id", "lumina_api_key", ["user_id"])
    op.create_table(
        "lumina_audit",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("at", utc_datetime_column_type(), nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("username", sa.String(128), nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("client_ip", sa.String(64), nullable=False),
        sa.Column("detail", sa.String(255), nullable=False),
        **_MYSQL,
    )
    op.create_index("ix_lumina_audit_at", "lumina_audit", ["at"])
    op.create_index("ix_lumina_audit_username", "lumina_audit", ["username", "id"])
    # Sessions signed in before this revision came from API keys: user_id is NULL in all
    # of them, so the key holds on every backend. SQLite alters through a table copy.
    with op.batch_alter_table("lumina_session") as batch:
        batch.create_foreign_key(
            "fk_lumina_session_user", "lumina_user", ["user_id"], ["id"], ondelete="CASCADE"
        )


def downgrade() -> None:
    with op.batch_alter_table("lumina_session") as batch:
        batch.drop_constraint("fk_lumina_session_user", type_="foreignkey")
    op.drop_index("ix_lumina_audit_username", table_name="lumina_audit")
    op.drop_index("ix_lumina_audit_at", table_name="lumina_audit")
    op.drop_table("lumina_audit")
    op.drop_table("lumina_api_key")  # with its index (MariaDB's foreign key needs it)
    op.drop_table("lumina_user")
