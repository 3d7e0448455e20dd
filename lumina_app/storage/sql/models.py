"""The cold store's tables (ARCHITECTURE.md § Data model), all here; Alembic targets them.

The attributes mirror the columns, so a row's conversation key is ``conversation_id`` here
and in SQL, while Python above the tables calls it ``conversation_pk`` (``domain/ids.py``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlmodel import Field, SQLModel

from lumina_app.domain import utcnow
from lumina_app.storage.sql.types import ChunkBytes, UTCDateTime, long_text_column_type

_MYSQL_TABLE_ARGS = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_unicode_ci"}


def _ref(
    target: str, *, ondelete: str | None = "CASCADE", name: str | None = None, **column: Any
) -> Any:
    """An integer column with a foreign key to ``target`` (``table.id``)."""
    key = sa.ForeignKey(target, ondelete=ondelete, name=name)
    return Field(sa_column=sa.Column(sa.Integer, key, **column))


def _utc(nullable: bool | None = None, **field: Any) -> Any:
    """A ``UTCDateTime`` column (``nullable`` passed on only where it is given)."""
    column = {} if nullable is None else {"nullable": nullable}
    return Field(sa_column=sa.Column(UTCDateTime(), **column), **field)


class ConversationRow(SQLModel, table=True):
    __tablename__ = "lumina_conversation"
    __table_args__ = (
        sa.Index("ix_lumina_conversation_listing", "agent_id", "owner", "updated_at", "id"),
        # One person's conversations across agents (the sidebar's one history, #45).
        sa.Index("ix_lumina_conversation_owner_listing", "owner", "updated_at", "id"),
        # The gateway's history matching: an owner's conversations of an agent that opened
        # with a given question (storage/sql/history_match.py).
        sa.Index("ix_lumina_conversation_opening", "owner", "agent_id", "opening_hash"),
        _MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    uuid: str = Field(sa_column=sa.Column(sa.String(36), nullable=False, unique=True))
    agent_id: str = Field(sa_column=sa.Column(sa.String(128), nullable=False, index=True))
    title: str = Field(default="", sa_column=sa.Column(sa.String(255), nullable=False))
    status: str = Field(default="idle", sa_column=sa.Column(sa.String(16), nullable=False))
    message_count: int = Field(default=0, nullable=False)
    tool_call_count: int = Field(default=0, nullable=False)
    last_seq: int = Field(default=0, nullable=False)
    owner: str = Field(default="", sa_column=sa.Column(sa.String(128), nullable=False))
    created_at: datetime = _utc(nullable=False, default_factory=utcnow)
    updated_at: datetime = _utc(nullable=False, default_factory=utcnow)
    parent_uuid: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(36), nullable=True, index=True)
    )
    forked_at_seq: int | None = Field(default=None, nullable=True)
    # The OpenAI-compatible gateway's: sha256 of the first question, and what a client sent
    # that is not a message (its system prompt).
    opening_hash: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(64), nullable=True)
    )
    meta: dict[str, Any] | None = Field(default=None, sa_column=sa.Column(sa.JSON, nullable=True))
    # Kept on top of the person's list; out of it (still open, searchable) once archived.
    pinned: bool = Field(
        default=False,
        sa_column=sa.Column(sa.Boolean, nullable=False, server_default=sa.false()),
    )
    archived_at: datetime | None = _utc(nullable=True, default=None)


class MessageRow(SQLModel, table=True):
    __tablename__ = "lumina_message"
    __table_args__ = (
        # UNIQUE(conversation_id, seq) and the index every window/history read uses, in one.
        sa.Index("ix_lumina_message_conversation_seq", "conversation_id", "seq", unique=True),
        _MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: int = _ref("lumina_conversation.id", nullable=False)
    seq: int = Field(nullable=False)
    turn_id: str = Field(sa_column=sa.Column(sa.String(64), nullable=False, index=True))
    role: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    content: str = Field(default="", sa_column=sa.Column(long_text_column_type(), nullable=False))
    status: str = Field(default="complete", sa_column=sa.Column(sa.String(16), nullable=False))
    created_at: datetime = _utc(nullable=False, default_factory=utcnow)
    updated_at: datetime = _utc(nullable=False, default_factory=utcnow)
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=sa.Column(sa.JSON, nullable=False))


class RunRow(SQLModel, table=True):
    """One execution: the context it used (scenario, seq range, model) and its outcome."""

    __tablename__ = "lumina_run"
    __table_args__ = (_MYSQL_TABLE_ARGS,)

    run_id: str = Field(sa_column=sa.Column(sa.String(40), primary_key=True))
    conversation_id: int = _ref("lumina_conversation.id", nullable=False, index=True)
    agent_id: str = Field(sa_column=sa.Column(sa.String(128), nullable=False))
    owner: str = Field(default="", sa_column=sa.Column(sa.String(128), nullable=False))
    scenario: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    provider: str = Field(sa_column=sa.Column(sa.String(32), nullable=False))
    model: str = Field(sa_column=sa.Column(sa.String(128), nullable=False))
    status: str = Field(sa_column=sa.Column(sa.String(16), nullable=False, index=True))
    context_first_seq: int | None = Field(default=None)
    context_last_seq: int | None = Field(default=None)
    context_messages: int = Field(default=0, nullable=False)
    user_message_id: int | None = Field(default=None)
    assistant_message_id: int | None = Field(default=None)
    started_at: datetime = _utc(nullable=False)
    finished_at: datetime | None = _utc(default=None)
    error: str | None = Field(default=None, sa_column=sa.Column(sa.Text()))
    # What the run's context was made of (prompt hash, summary, message ids, trims): enough
    # to rebuild exactly what the provider was sent (GET /api/v1/runs/{id}/context).
    context: dict[str, Any] | None = Field(default=None, sa_column=sa.Column(sa.JSON))
    trimmed: int = Field(
        default=0, sa_column=sa.Column(sa.Integer, nullable=False, server_default="0")
    )


def _exact_text(length: int) -> sa.types.TypeEngine:
    """A string compared byte for byte: with MySQL's case-insensitive collation the
    Idempotency-Keys ``AbC`` and ``abc`` were one key there (and only there)."""
    return sa.String(length).with_variant(
        mysql.VARCHAR(length, collation="utf8mb4_bin"), "mysql", "mariadb"
    )


class SummaryRow(SQLModel, table=True):
    """The rolling summary of what left a conversation's window: it covers seq 1 to
    ``covered_to_seq``; each new one extends the previous."""

    __tablename__ = "lumina_summary"
    __table_args__ = (
        sa.Index("ix_lumina_summary_conversation", "conversation_id", "covered_to_seq"),
        _MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: int = _ref("lumina_conversation.id", nullable=False)
    covered_to_seq: int = Field(nullable=False)
    text: str = Field(sa_column=sa.Column(long_text_column_type(), nullable=False))
    model: str = Field(sa_column=sa.Column(sa.String(128), nullable=False))
    created_at: datetime = _utc(nullable=False)


class PromptRow(SQLModel, table=True):
    """A system prompt as a run used it, kept once per distinct text (by SHA-256)."""

    __tablename__ = "lumina_prompt"
    __table_args__ = (_MYSQL_TABLE_ARGS,)

    hash: str = Field(sa_column=sa.Column(sa.String(64), primary_key=True))
    text: str = Field(sa_column=sa.Column(long_text_column_type(), nullable=False))
    created_at: datetime = _utc(nullable=False)


class IdempotencyRow(SQLModel, table=True):
    """A create-request's key and first response, so a retry returns it and creates nothing.

    While the first request runs, ``claimed_by`` names it and ``alive_at`` is when it last
    showed it is alive (its lease); both are cleared once the response is recorded.
    """

    __tablename__ = "lumina_idempotency"
    __table_args__ = (_MYSQL_TABLE_ARGS,)

    owner: str = Field(sa_column=sa.Column(_exact_text(128), primary_key=True))
    key: str = Field(sa_column=sa.Column(_exact_text(255), primary_key=True))
    fingerprint: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    response: dict[str, Any] | None = Field(default=None, sa_column=sa.Column(sa.JSON))
    created_at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False, index=True))
    alive_at: datetime | None = _utc(default=None)
    claimed_by: str | None = Field(default=None, sa_column=sa.Column(sa.String(32)))


class MessageVectorRow(SQLModel, table=True):
    """A message's embedding for recall (``model`` names what made it): float16, base64. The
    row goes with its message (cascade); ``conversation_id`` keeps a conversation's vectors
    one indexed read away."""

    __tablename__ = "lumina_message_vector"
    __table_args__ = (
        sa.Index("ix_lumina_message_vector_conversation", "conversation_id", "model"),
        _MYSQL_TABLE_ARGS,
    )

    message_id: int = _ref("lumina_message.id", primary_key=True, autoincrement=False)
    conversation_id: int = Field(nullable=False)
    model: str = Field(sa_column=sa.Column(sa.String(128), nullable=False))
    vector: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    created_at: datetime = _utc(nullable=False)


conversations: sa.Table = ConversationRow.__table__  # type: ignore[attr-defined]
messages: sa.Table = MessageRow.__table__  # type: ignore[attr-defined]
runs: sa.Table = RunRow.__table__  # type: ignore[attr-defined]
idempotency: sa.Table = IdempotencyRow.__table__  # type: ignore[attr-defined]
summaries: sa.Table = SummaryRow.__table__  # type: ignore[attr-defined]
prompts: sa.Table = PromptRow.__table__  # type: ignore[attr-defined]
message_vectors: sa.Table = MessageVectorRow.__table__  # type: ignore[attr-defined]
metadata = SQLModel.metadata


class SessionRow(SQLModel, table=True):
    """A signed-in browser. The cookie carries a random token; only its SHA-256 is kept."""

    __tablename__ = "lumina_session"
    __table_args__ = (_MYSQL_TABLE_ARGS,)

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(sa_column=sa.Column(sa.String(64), nullable=False, unique=True))
    owner: str = Field(sa_column=sa.Column(sa.String(128), nullable=False, index=True))
    user_id: int | None = Field(
        default=None,
        sa_column=sa.Column(
            sa.Integer,
            sa.ForeignKey("lumina_user.id", ondelete="CASCADE", name="fk_lumina_session_user"),
            index=True,
        ),
    )
    method: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    created_at: datetime = _utc(nullable=False)
    expires_at: datetime = _utc(nullable=False)
    last_seen_at: datetime = _utc(nullable=False)
    user_agent: str = Field(default="", sa_column=sa.Column(sa.String(255), nullable=False))
    client_ip: str = Field(default="", sa_column=sa.Column(sa.String(64), nullable=False))
    revoked_at: datetime | None = _utc(default=None)


sessions: sa.Table = SessionRow.__table__  # type: ignore[attr-defined]


class UserRow(SQLModel, table=True):
    """An account: the username is also the owner of its data. Only an Argon2 hash of the
    password is kept; a disabled account keeps its data but cannot sign in."""

    __tablename__ = "lumina_user"
    __table_args__ = (_MYSQL_TABLE_ARGS,)

    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(sa_column=sa.Column(_exact_text(64), nullable=False, unique=True))
    password_hash: str = Field(sa_column=sa.Column(sa.String(255), nullable=False))
    role: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    must_change_password: bool = Field(
        default=False, sa_column=sa.Column(sa.Boolean, nullable=False)
    )
    created_at: datetime = _utc(nullable=False)
    password_changed_at: datetime = _utc(nullable=False)
    disabled_at: datetime | None = _utc(default=None)


class ApiKeyRow(SQLModel, table=True):
    """A user's API key: its SHA-256 and first characters, never the key."""

    __tablename__ = "lumina_api_key"
    __table_args__ = (_MYSQL_TABLE_ARGS,)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = _ref("lumina_user.id", name="fk_lumina_api_key_user", nullable=False, index=True)
    name: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    prefix: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    key_hash: str = Field(sa_column=sa.Column(sa.String(64), nullable=False, unique=True))
    created_at: datetime = _utc(nullable=False)
    last_used_at: datetime | None = _utc(default=None)
    revoked_at: datetime | None = _utc(default=None)


class AuditRow(SQLModel, table=True):
    """The audit log: sign-ins and their failures, key use, account changes."""

    __tablename__ = "lumina_audit"
    __table_args__ = (
        sa.Index("ix_lumina_audit_username", "username", "id"),
        _MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(sa_column=sa.Column(UTCDateTime(), nullable=False, index=True))
    event: str = Field(sa_column=sa.Column(sa.String(32), nullable=False))
    username: str = Field(default="", sa_column=sa.Column(sa.String(128), nullable=False))
    actor: str = Field(default="", sa_column=sa.Column(sa.String(128), nullable=False))
    client_ip: str = Field(default="", sa_column=sa.Column(sa.String(64), nullable=False))
    detail: str = Field(default="", sa_column=sa.Column(sa.String(255), nullable=False))


users: sa.Table = UserRow.__table__  # type: ignore[attr-defined]
api_keys: sa.Table = ApiKeyRow.__table__  # type: ignore[attr-defined]
audit: sa.Table = AuditRow.__table__  # type: ignore[attr-defined]


class MemoryRow(SQLModel, table=True):
    """A long-term memory: a short fact about its owner, kept per agent, with where it came
    from and the recall embedder's vector (float16, base64; ``model`` names what made it)."""

    __tablename__ = "lumina_memory"
    __table_args__ = (
        sa.Index("ix_lumina_memory_owner", "owner", "agent_id", "status", "updated_at"),
        # A memory's history: the earlier versions it replaced (migration 0015).
        sa.Index("ix_lumina_memory_replaced", "owner", "superseded_by"),
        _MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    owner: str = Field(default="", sa_column=sa.Column(sa.String(128), nullable=False))
    agent_id: str = Field(sa_column=sa.Column(sa.String(128), nullable=False))
    text: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    status: str = Field(default="active", sa_column=sa.Column(sa.String(16), nullable=False))
    pinned: bool = Field(default=False, sa_column=sa.Column(sa.Boolean, nullable=False))
    conversation_uuid: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(36), nullable=True)
    )
    seq: int | None = Field(default=None, nullable=True)
    superseded_by: int | None = Field(default=None, nullable=True)
    valid_from: datetime = _utc(nullable=False)
    valid_until: datetime | None = _utc(nullable=True, default=None)
    model: str | None = Field(default=None, sa_column=sa.Column(sa.String(128), nullable=True))
    vector: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    # who added it outside a conversation, e.g. "added over MCP by Claude Code" (0016)
    origin: str | None = Field(default=None, sa_column=sa.Column(sa.String(128), nullable=True))
    created_at: datetime = _utc(nullable=False)
    updated_at: datetime = _utc(nullable=False)


memories: sa.Table = MemoryRow.__table__  # type: ignore[attr-defined]


class FileBlobRow(SQLModel, table=True):
    """Uploaded bytes, stored once per owner and content (docs/FILES.md): the chunks hold
    them, each file row that has this content points here."""

    __tablename__ = "lumina_file_blob"
    __table_args__ = (
        sa.UniqueConstraint("owner", "sha256", name="uq_lumina_file_blob_owner_sha256"),
        _MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    owner: str = Field(sa_column=sa.Column(sa.String(128), nullable=False))
    sha256: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    size: int = Field(sa_column=sa.Column(sa.BigInteger, nullable=False))
    created_at: datetime = _utc(nullable=False)


class FileChunkRow(SQLModel, table=True):
    """The ``n``-th piece of a blob's bytes, 512 KiB or less (MariaDB's packet limit and
    the memory a download holds stay bounded)."""

    __tablename__ = "lumina_file_chunk"
    __table_args__ = (_MYSQL_TABLE_ARGS,)

    blob_id: int = _ref("lumina_file_blob.id", primary_key=True, autoincrement=False)
    n: int = Field(sa_column=sa.Column(sa.Integer, primary_key=True, autoincrement=False))
    data: bytes = Field(sa_column=sa.Column(ChunkBytes(), nullable=False))


class FileRow(SQLModel, table=True):
    """An uploaded file as its owner sees it: a public id, a name and the type sniffed
    from its bytes. Several rows may share a blob (the same bytes uploaded again)."""

    __tablename__ = "lumina_file"
    __table_args__ = (
        sa.Index("ix_lumina_file_owner_listing", "owner", "created_at", "id"),
        _MYSQL_TABLE_ARGS,
    )

    id: int | None = Field(default=None, primary_key=True)
    file_id: str = Field(sa_column=sa.Column(sa.String(32), nullable=False, unique=True))
    owner: str = Field(sa_column=sa.Column(sa.String(128), nullable=False))
    blob_id: int = _ref(
        "lumina_file_blob.id", ondelete=None, name="fk_lumina_file_blob", nullable=False, index=True
    )
    name: str = Field(sa_column=sa.Column(sa.String(255), nullable=False))
    media_type: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    size: int = Field(sa_column=sa.Column(sa.BigInteger, nullable=False))
    sha256: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    created_at: datetime = _utc(nullable=False)


class MessageFileRow(SQLModel, table=True):
    """A file a message carries (its ``position`` among them), by conversation and seq: a
    question is linked whether or not its row has reached SQL yet. The link goes with the
    conversation and with the file (cascades); a file goes when its last link does
    (``storage/sql/files.py``)."""

    __tablename__ = "lumina_message_file"
    __table_args__ = (
        sa.Index("ix_lumina_message_file_file", "file_pk"),
        _MYSQL_TABLE_ARGS,
    )

    conversation_id: int = _ref(
        "lumina_conversation.id",
        name="fk_lumina_message_file_conversation",
        primary_key=True,
        autoincrement=False,
    )
    seq: int = Field(sa_column=sa.Column(sa.Integer, primary_key=True, autoincrement=False))
    file_pk: int = _ref(
        "lumina_file.id", name="fk_lumina_message_file_file", primary_key=True, autoincrement=False
    )
    position: int = Field(nullable=False)


class FileTextRow(SQLModel, table=True):
    """The text read out of a blob once (plain text, Markdown, code, CSV, JSON, a PDF's
    text): ``status`` ``ok`` / ``empty`` / ``refused`` / ``failed`` with a ``note`` why;
    what the context, search and recall use."""

    __tablename__ = "lumina_file_text"
    __table_args__ = (_MYSQL_TABLE_ARGS,)

    blob_id: int = _ref(
        "lumina_file_blob.id",
        name="fk_lumina_file_text_blob",
        primary_key=True,
        autoincrement=False,
    )
    status: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    text: str = Field(default="", sa_column=sa.Column(long_text_column_type(), nullable=False))
    chars: int = Field(nullable=False)
    pages: int | None = Field(default=None, nullable=True)
    note: str | None = Field(default=None, sa_column=sa.Column(sa.String(255), nullable=True))
    created_at: datetime = _utc(nullable=False)


file_blobs: sa.Table = FileBlobRow.__table__  # type: ignore[attr-defined]
file_chunks: sa.Table = FileChunkRow.__table__  # type: ignore[attr-defined]
files: sa.Table = FileRow.__table__  # type: ignore[attr-defined]
message_files: sa.Table = MessageFileRow.__table__  # type: ignore[attr-defined]
file_texts: sa.Table = FileTextRow.__table__  # type: ignore[attr-defined]


# The full-text index lives outside the models (migration 0007: an FTS5 table and its
# triggers on SQLite, an expression GIN index on PostgreSQL, a FULLTEXT index on MariaDB).
# tables, indexes and PostgreSQL's stored document column (migration 0014)
SEARCH_OBJECT_PREFIXES = ("lumina_message_fts", "ix_lumina_message_fts", "search_vector")


def is_search_object(name: str | None) -> bool:
    """Whether a table, index or column belongs to the full-text index (not to these models)."""
    return bool(name) and name.startswith(SEARCH_OBJECT_PREFIXES)
