"""Memory beyond the window: a full-text index on message text, rolling summaries, system
prompt versions, and what each run's context was made of.

* Full-text index, per backend (only final rows are indexed: a growing answer is not
  re-indexed on every flush):
  - SQLite: an FTS5 table over lumina_message (external content) kept by triggers;
  - PostgreSQL: a GIN index on ``to_tsvector('simple', left(content, 100000))``;
  - MariaDB/MySQL: a FULLTEXT index on ``content``.
* lumina_summary: the rolling summary of what left a conversation's window (covers seq
  1..covered_to_seq).
* lumina_prompt: each distinct system prompt a run used, by its SHA-256.
* lumina_run.context (the recipe a run's context was built from) and lumina_run.trimmed.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lumina_app.storage.sql.types import long_text_column_type, utc_datetime_column_type

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_unicode_ci"}

_SQLITE_FTS = [
    """CREATE VIRTUAL TABLE lumina_message_fts USING fts5(
        content, content='lumina_message', content_rowid='id',
        tokenize='unicode61 remove_diacritics 2')""",
    """INSERT INTO lumina_message_fts(rowid, content)
        SELECT id, content FROM lumina_message WHERE status <> 'streaming'""",
    """CREATE TRIGGER lumina_message_fts_insert AFTER INSERT ON lumina_message
        WHEN new.status <> 'streaming' BEGIN
        INSERT INTO lumina_message_fts(rowid, content) VALUES (new.id, new.content);
    END""",
    """CREATE TRIGGER lumina_message_fts_delete AFTER DELETE ON lumina_message
        WHEN old.status <> 'streaming' BEGIN
        INSERT INTO lumina_message_fts(lumina_message_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
    END""",
    """CREATE TRIGGER lumina_message_fts_update AFTER UPDATE OF content, status
        ON lumina_message BEGIN
        INSERT INTO lumina_message_fts(lumina_message_fts, rowid, content)
            SELECT 'delete', old.id, old.content WHERE old.status <> 'streaming';
        INSERT INTO lumina_message_fts(rowid, content)
            SELECT new.id, new.content WHERE new.status <> 'streaming';
    END""",
]
_POSTGRES_FTS = [
    """CREATE INDEX ix_lumina_message_fts ON lumina_message
        USING gin (to_tsvector('simple', left(content, 100000)))
        WHERE status <> 'streaming'""",
]
_MYSQL_FTS = ["ALTER TABLE lumina_message ADD FULLTEXT INDEX ix_lumina_message_fts (content)"]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    for statement in {"sqlite": _SQLITE_FTS, "postgresql": _POSTGRES_FTS}.get(dialect, _MYSQL_FTS):
        op.execute(statement)
    op.create_table(
        "lumina_summary",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "conversation_id",
            sa.Integer(),
            sa.ForeignKey("lumina_conversation.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("covered_to_seq", sa.Integer(), nullable=False),
        sa.Column("text", long_text_column_type(), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        **_MYSQL,
    )
    op.create_index(
        "ix_lumina_summary_conversation",
        "lumina_summary",
        ["conversation_id", "covered_to_seq"],
    )
    op.create_table(
        "lumina_prompt",
        sa.Column("hash", sa.String(64), primary_key=True),
        sa.Column("text", long_text_column_type(), nullable=False),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        **_MYSQL,
    )
    with op.batch_alter_table("lumina_run") as batch:
        batch.add_column(sa.Column("context", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("trimmed", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("lumina_run") as batch:
        batch.drop_column("trimmed")
        batch.drop_column("context")
    op.drop_table("lumina_prompt")
    op.drop_table("lumina_summary")  # its index goes with it (MariaDB's FK needs it till then)
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER lumina_message_fts_{trigger}")
        op.execute("DROP TABLE lumina_message_fts")
    elif dialect == "postgresql":
        op.execute("DROP INDEX ix_lumina_message_fts")
    else:
        op.execute("ALTER TABLE lumina_message DROP INDEX ix_lumina_message_fts")
