"""The cold-store side of recall: the rows a ranking reads (a conversation's final
questions and answers with their vectors), and the vectors a background worker writes.

Vectors are stored as base64 text (aiomysql cannot bind bytes). Only final USER and
ASSISTANT rows are recalled: a streaming answer is not said yet, a
superseded one was replaced, tool output and system notes are not what was said.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from lumina_app.domain import MessageStatus, MsgRole, utcnow
from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import message_vectors as V
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.sqlite_inline import offloaded

RECALLED_ROLES = (MsgRole.USER.value, MsgRole.ASSISTANT.value)
_NOT_RECALLED = (MessageStatus.STREAMING.value, MessageStatus.SUPERSEDED.value)


@dataclass(frozen=True, slots=True)
class RecallRow:
    message_id: int
    conversation_pk: ConversationPk
    seq: int
    role: MsgRole
    content: str
    created_at: datetime
    vector: bytes | None


@dataclass(frozen=True, slots=True)
class PendingRow:
    """A message without a vector of the current model, and the text said just before it."""

    message_id: int
    conversation_pk: ConversationPk
    content: str
    previous: str


def _recalled() -> sa.ColumnElement[bool]:
    return sa.and_(M.c.status.not_in(_NOT_RECALLED), M.c.role.in_(RECALLED_ROLES))


def _rows_query(model: str) -> sa.Select:
    joined = M.outerjoin(V, sa.and_(V.c.message_id == M.c.id, V.c.model == model))
    columns = (M.c.id, M.c.conversation_id, M.c.seq, M.c.role, M.c.content, M.c.created_at)
    return sa.select(*columns, V.c.vector).select_from(joined).where(_recalled())


def _row(r: sa.Row) -> RecallRow:
    vector = base64.b64decode(r.vector) if r.vector else None
    return RecallRow(r.id, r.conversation_id, r.seq, MsgRole(r.role), r.content, r.created_at,
                     vector)  # fmt: skip


async def conversation_rows(
    db: SQLDatabase, conversation_pk: ConversationPk, model: str
) -> list[RecallRow]:
    """Every recalled row of one conversation in seq order, with its vector if it has one."""
    query = _rows_query(model).where(M.c.conversation_id == conversation_pk).order_by(M.c.seq)
    with offloaded():  # the whole conversation: keep it off the event loop's thread
        async with db.connect() as conn:
            return [_row(r) for r in (await conn.execute(query)).all()]


async def rows_by_id(db: SQLDatabase, ids: Sequence[int], model: str) -> list[RecallRow]:
    """Recalled rows by message id (candidates found by the full-text index)."""
    if not ids:
        return []
    query = _rows_query(model).where(M.c.id.in_(list(ids)))
    async with db.connect() as conn:
        return [_row(r) for r in (await conn.execute(query)).all()]


async def said_before(db: SQLDatabase, rows: Sequence[RecallRow]) -> dict[tuple[int, int], str]:
    """The recalled text just before each row, by (conversation id, seq): one query."""
    wanted = {(r.conversation_pk, r.seq - 1) for r in rows if r.seq > 1}
    if not wanted:
        return {}
    by_conversation: dict[int, list[int]] = {}
    for cid, seq in wanted:
        by_conversation.setdefault(cid, []).append(seq)
    where = sa.or_(*(sa.and_(M.c.conversation_id == cid, M.c.seq.in_(seqs))
                     for cid, seqs in by_conversation.items()))  # fmt: skip
    query = sa.select(M.c.conversation_id, M.c.seq, M.c.content).where(where, _recalled())
    async with db.connect() as conn:
        found = (await conn.execute(query)).all()
    return {(r.conversation_id, r.seq + 1): r.content for r in found}


async def version(
    db: SQLDatabase, conversation_pk: ConversationPk, model: str
) -> tuple[object, ...]:
    """(last seq, last change, vectors stored): what a cached index of the conversation must
    still match (an answer that ends changes the conversation, not its last seq)."""
    vectors = (
        sa.select(sa.func.count())
        .select_from(V)
        .where(V.c.conversation_id == conversation_pk, V.c.model == model)
        .scalar_subquery()
    )
    query = sa.select(C.c.last_seq, C.c.updated_at, vectors).where(C.c.id == conversation_pk)
    async with db.connect() as conn:
        row = (await conn.execute(query)).first()
    return tuple(row) if row else ()


async def pending(
    db: SQLDatabase,
    model: str,
    *,
    conversation_pk: ConversationPk | None = None,
    limit: int = 256,
    chars: int = 8000,
) -> list[PendingRow]:
    """Recalled rows with no vector of ``model`` yet, oldest first, with the text before each:
    the first ``chars`` characters of each, what an embedding reads (a message of megabytes
    is not fetched whole to embed its start)."""
    missing = M.outerjoin(V, sa.and_(V.c.message_id == M.c.id, V.c.model == model))
    content = sa.func.substr(M.c.content, 1, chars).label("content")
    query = (
        sa.select(M.c.id, M.c.conversation_id, M.c.seq, content)
        .select_from(missing)
        .where(_recalled(), V.c.message_id.is_(None))
        .order_by(M.c.id)
        .limit(limit)
    )
    if conversation_pk is not None:
        query = query.where(M.c.conversation_id == conversation_pk)
    with offloaded():
        async with db.connect() as conn:
            rows = (await conn.execute(query)).all()
            wanted = {(r.conversation_id, r.seq - 1) for r in rows}
            before: dict[tuple[int, int], str] = {}
            for cid in {c for c, _ in wanted}:
                seqs = [s for c, s in wanted if c == cid]
                prev = sa.select(M.c.seq, content).where(
                    M.c.conversation_id == cid, M.c.seq.in_(seqs), _recalled()
                )
                before |= {(cid, p.seq): p.content for p in (await conn.execute(prev)).all()}
    return [
        PendingRow(
            r.id, r.conversation_id, r.content, before.get((r.conversation_id, r.seq - 1), "")
        )
        for r in rows
    ]


async def write_vectors(
    db: SQLDatabase, model: str, vectors: Sequence[tuple[int, int, bytes]]
) -> None:
    """Store (message id, conversation id, vector) rows, replacing earlier ones; a message
    deleted meanwhile is skipped (its row would have nothing to point at)."""
    if not vectors:
        return
    ids = [v[0] for v in vectors]
    now = utcnow()
    with offloaded():
        async with db.begin() as conn:
            alive = set(
                (await conn.execute(sa.select(M.c.id).where(M.c.id.in_(ids)))).scalars().all()
            )
            await conn.execute(sa.delete(V).where(V.c.message_id.in_(ids)))
            rows = [
                {"message_id": m, "conversation_id": c, "model": model,
                 "vector": base64.b64encode(v).decode("ascii"), "created_at": now}
                for m, c, v in vectors
                if m in alive
            ]  # fmt: skip
            if rows:
                await conn.execute(sa.insert(V), rows)
