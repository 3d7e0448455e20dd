"""The cold-store side of recall: the rows a ranking reads (a conversation's final
questions and answers with their vectors), and the vectors a background worker writes.

Vectors are stored as base64 text (aiomysql cannot bind bytes). Only final USER and
ASSISTANT rows are recalled: a streaming answer is not said yet, a
superseded one was replaced, tool output and system notes are not what was said.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Collection, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import insert as mysql_insert
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

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


# A conversation's rows beyond this many are turned into RecallRows on a worker thread.
ROWS_IN_THREAD = 2_000


@dataclass(frozen=True, slots=True)
class PendingRow:
    """A message without a vector of the current model, and the text said just before it."""

    message_id: int
    conversation_pk: ConversationPk
    content: str
    previous: str


def _recalled() -> sa.ColumnElement[bool]:
    return sa.and_(M.c.status.not_in(_NOT_RECALLED), M.c.role.in_(RECALLED_ROLES))


def _said_before() -> tuple[sa.Alias, sa.ColumnElement[bool]]:
    """The recalled row just before each message, and how to join it (through the
    (conversation, seq) index)."""
    P = M.alias("said_before")
    return P, sa.and_(
        P.c.conversation_id == M.c.conversation_id,
        P.c.seq == M.c.seq - 1,
        P.c.status.not_in(_NOT_RECALLED),
        P.c.role.in_(RECALLED_ROLES),
    )


_COLUMNS = (M.c.id, M.c.conversation_id, M.c.seq, M.c.role, M.c.content, M.c.created_at)


def _rows_query(model: str | sa.BindParameter) -> sa.Select:
    joined = M.outerjoin(V, sa.and_(V.c.message_id == M.c.id, V.c.model == model))
    return sa.select(*_COLUMNS, V.c.vector).select_from(joined).where(_recalled())


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
        found = await db.rows(query)
    if len(found) > ROWS_IN_THREAD:  # decoding 10,000 rows' vectors takes ~0.15 s
        return await asyncio.to_thread(lambda: [_row(r) for r in found])
    return [_row(r) for r in found]


async def rows_after(
    db: SQLDatabase, conversation_pk: ConversationPk, model: str, seq: int
) -> list[RecallRow]:
    """:func:`conversation_rows` after ``seq`` only (what an earlier read had not seen)."""
    query = (
        _rows_query(model)
        .where(M.c.conversation_id == conversation_pk, M.c.seq > seq)
        .order_by(M.c.seq)
    )
    return [_row(r) for r in await db.rows(query)]


@dataclass(frozen=True, slots=True)
class Said:
    """A fingerprint of a conversation's recalled rows up to a seq: their count, the sum
    of their ids, the sum of their texts' lengths and their newest ``updated_at``. A row
    said, made final, replaced or deleted changes it (a text is only written with its
    ``updated_at``)."""

    through: int
    state: tuple[object, ...]


async def said(
    db: SQLDatabase, conversation_pk: ConversationPk, last_seq: int, earlier: int | None = None
) -> tuple[Said, Said | None]:
    """The fingerprint through ``last_seq`` (or through the seq before the first answer
    still streaming after ``earlier``, if that comes first: it changes when it ends), and
    the one through ``earlier`` if given. One statement, counted by the database over the
    (conversation, seq) index in two ranges, up to ``earlier`` and after it: no row comes
    back, and no row is counted twice."""
    start = -1 if earlier is None else earlier
    streaming = (
        sa.select(sa.func.min(M.c.seq))
        .where(
            M.c.conversation_id == conversation_pk,
            M.c.seq > start,
            M.c.status == MessageStatus.STREAMING.value,
        )
        .scalar_subquery()
    )
    ranges = [
        sa.and_(M.c.seq <= start),
        sa.and_(
            M.c.seq > start,
            M.c.seq <= last_seq,
            M.c.seq < sa.func.coalesce(streaming, last_seq + 1),
        ),
    ]
    parts = [
        sa.select(
            sa.literal(i).label("part"),
            sa.func.count().label("n"),
            sa.func.sum(M.c.id).label("ids"),
            sa.func.sum(sa.func.length(M.c.content)).label("chars"),
            sa.func.max(M.c.updated_at).label("changed"),
            (streaming if i else sa.null()).label("streaming"),
        ).where(M.c.conversation_id == conversation_pk, _recalled(), within)
        for i, within in enumerate(ranges)
    ]
    with offloaded() if last_seq > ROWS_IN_THREAD else nullcontext():
        found = {r.part: r for r in await db.rows(sa.union_all(*parts))}
    before, after = found[0], found[1]
    upto = (before.n, before.ids or 0, before.chars or 0, before.changed)
    first_streaming = after.streaming
    through = last_seq if first_streaming is None else min(last_seq, first_streaming - 1)
    now = Said(
        max(through, start),
        (
            before.n + after.n,
            (before.ids or 0) + (after.ids or 0),
            (before.chars or 0) + (after.chars or 0),
            max((t for t in (before.changed, after.changed) if t is not None), default=None),
        ),
    )
    return now, (Said(earlier, upto) if earlier is not None else None)


async def vectors_of(db: SQLDatabase, message_ids: Sequence[int], model: str) -> dict[int, bytes]:
    """The ``model`` vectors stored for these messages, by message id."""
    if not message_ids:
        return {}
    query = sa.select(V.c.message_id, V.c.vector).where(
        V.c.model == model, V.c.message_id.in_(list(message_ids))
    )
    found = await db.rows(query)
    return {r.message_id: base64.b64decode(r.vector) for r in found}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A row found across conversations: with the text said before it, and where it is."""

    row: RecallRow
    previous: str
    conversation_uuid: str
    conversation_title: str


async def candidates(db: SQLDatabase, ids: Sequence[int], model: str) -> list[Candidate]:
    """Recalled rows by message id (found by the full-text index), each with the recalled
    text just before it ("" if none) and its conversation's uuid and title: one query, the
    row before found through the (conversation, seq) index; on PostgreSQL the vector and
    the conversation looked up per row, not joined. In id order: ranked in the order
    PostgreSQL's plan happened to return them, the same rows summed to scores a last digit
    apart from one run to the next."""
    if not ids:
        return []
    params = {"ids": list(ids), "model": model}
    with offloaded():  # up to a few thousand texts
        found = await db.rows(_candidates_query(db.dialect), params)
    return [Candidate(_row(r), r.previous or "", r.uuid, r.title) for r in found]


@lru_cache(maxsize=4)
def _candidates_query(dialect: str) -> sa.Select:
    """:func:`candidates`' statement, built once per dialect (building it took longer than
    PostgreSQL takes to run it); ``ids`` and ``model`` are bound at each call."""
    P, before = _said_before()
    model = sa.bindparam("model", type_=sa.String)
    if dialect == "postgresql":  # its planner may hash every vector or conversation
        query = sa.select(
            *_COLUMNS,
            _per_row(V.c.vector, V.c.message_id == M.c.id, V.c.model == model),
            P.c.content.label("previous"),
            _per_row(C.c.uuid, C.c.id == M.c.conversation_id),
            _per_row(C.c.title, C.c.id == M.c.conversation_id),
        ).select_from(M.outerjoin(P, before))
        # one array parameter, not one per id (binding and parsing hundreds of
        # placeholders cost more than the query)
        among = M.c.id == sa.any_(sa.bindparam("ids", type_=ARRAY(sa.Integer)))
    else:
        query = (
            _rows_query(model)
            .outerjoin(P, before)
            .join(C, C.c.id == M.c.conversation_id)
            .add_columns(P.c.content.label("previous"), C.c.uuid, C.c.title)
        )
        among = M.c.id.in_(sa.bindparam("ids", expanding=True))
    return query.where(_recalled(), among).order_by(M.c.id)


def _per_row(column: sa.Column, *where: sa.ColumnElement[bool]) -> sa.Label:
    """``column`` of the one row matching ``where`` for each message (an index lookup)."""
    return sa.select(column).where(*where).correlate(M).scalar_subquery().label(column.name)


async def agent_of(db: SQLDatabase, conversation_pk: ConversationPk) -> str:
    """The conversation's agent ("" if it is gone): whose embedder its vectors are."""
    query = sa.select(C.c.agent_id).where(C.c.id == conversation_pk)
    return await db.scalar(query) or ""


async def agents_of(
    db: SQLDatabase, conversation_pks: Collection[ConversationPk]
) -> dict[ConversationPk, str]:
    """:func:`agent_of` for many conversations in one query (a conversation gone is absent)."""
    if not conversation_pks:
        return {}
    query = sa.select(C.c.id, C.c.agent_id).where(C.c.id.in_(list(conversation_pks)))
    return {r.id: r.agent_id for r in await db.rows(query)}


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
    row = await db.first(query)
    return tuple(row) if row else ()


def stored_chars(dimension: int) -> int:
    """The stored (base64) length of a float16 vector of ``dimension`` numbers."""
    return 4 * -(-2 * dimension // 3)


async def pending(
    db: SQLDatabase,
    model: str,
    *,
    conversation_pks: Collection[ConversationPk] | None = None,
    turns: Collection[str] | None = None,
    limit: int = 256,
    chars: int = 8000,
    dimension: int | None = None,
    agents: Collection[str] | None = None,
    not_agents: Collection[str] = (),
) -> list[PendingRow]:
    """Recalled rows with no vector of ``model`` yet (or, ``dimension`` given, one of
    another size: the model's server changed), oldest first, with the text before each:
    the first ``chars`` characters of each, what an embedding reads (a message of megabytes
    is not fetched whole to embed its start). ``conversation_pks``: only those
    conversations; ``turns``: only the rows of those turns (through the turn index: what a
    turn just wrote, however long its conversation); ``agents``/``not_agents``: only the
    conversations of those agents / of the others. One query, the row before found
    through the (conversation, seq) index."""
    params: dict[str, object] = {"model": model, "chars": chars, "limit": limit}
    if dimension is not None:
        params["size"] = stored_chars(dimension)
    scope = {"pks": conversation_pks, "turns": turns, "agents": agents}
    scope["not_agents"] = not_agents or None
    params.update({k: list(v) for k, v in scope.items() if v is not None})
    query = _pending_query(dimension is not None, *(scope[k] is not None for k in _SCOPES))
    # Whole conversations may be long: off the event loop's thread on SQLite. A few turns'
    # rows are a few index lookups, cheaper inline than the hand-over to the thread.
    with nullcontext() if turns is not None else offloaded():
        rows = await db.rows(query, params)
    return [PendingRow(r.id, r.conversation_id, r.content, r.previous or "") for r in rows]


_SCOPES = ("pks", "turns", "agents", "not_agents")


@lru_cache(maxsize=32)
def _pending_query(
    sized: bool, pks: bool, turns: bool, agents: bool, not_agents: bool
) -> sa.Select:
    """:func:`pending`'s statement, built once per shape (building it took longer than
    running it for one turn's rows); the values are bound at each call."""
    model, chars = sa.bindparam("model", type_=sa.String), sa.bindparam("chars", type_=sa.Integer)
    missing = M.outerjoin(V, sa.and_(V.c.message_id == M.c.id, V.c.model == model))
    P, before = _said_before()
    absent = V.c.message_id.is_(None)
    if sized:
        absent = sa.or_(
            absent, sa.func.length(V.c.vector) != sa.bindparam("size", type_=sa.Integer)
        )
    query = (
        sa.select(
            M.c.id,
            M.c.conversation_id,
            sa.func.substr(M.c.content, 1, chars).label("content"),
            sa.func.substr(P.c.content, 1, chars).label("previous"),
        )
        .select_from(missing.outerjoin(P, before))
        .where(_recalled(), absent)
        .order_by(M.c.id)
        .limit(sa.bindparam("limit", type_=sa.Integer))
    )
    in_ = {k: sa.bindparam(k, expanding=True) for k in _SCOPES}
    if turns:
        # Through the turn index: "+ 0" keeps SQLite's planner off the conversation index,
        # which it prefers without statistics and which reads the whole conversation.
        query = query.where(M.c.turn_id.in_(in_["turns"]))
        if pks:  # a fork copies its source's turn ids
            query = query.where((M.c.conversation_id + 0).in_(in_["pks"]))
    elif pks:
        query = query.where(M.c.conversation_id.in_(in_["pks"]))
    if agents or not_agents:
        owned = sa.select(C.c.id)
        if agents:
            owned = owned.where(C.c.agent_id.in_(in_["agents"]))
        if not_agents:
            owned = owned.where(C.c.agent_id.not_in(in_["not_agents"]))
        query = query.where(M.c.conversation_id.in_(owned))
    return query


async def write_vectors(
    db: SQLDatabase, model: str, vectors: Sequence[tuple[int, int, bytes]]
) -> None:
    """Store (message id, conversation id, vector) rows, replacing earlier ones; a message
    deleted meanwhile is skipped (its row would have nothing to point at). One statement:
    the INSERT selects from the message rows themselves (so a row gone is not written) and
    replaces a vector already there (an upsert on the message id)."""
    if not vectors:
        return
    ids = [v[0] for v in vectors]
    encoded = {m: base64.b64encode(v).decode("ascii") for m, _c, v in vectors}
    vector = sa.case({m: sa.literal(text, sa.Text) for m, text in encoded.items()}, value=M.c.id)
    alive = sa.select(
        M.c.id, M.c.conversation_id, sa.literal(model, V.c.model.type), vector,
        sa.literal(utcnow(), V.c.created_at.type),
    ).where(M.c.id.in_(ids))  # fmt: skip
    with offloaded():
        await db.write(_upsert(db.dialect, alive))


_REPLACED = ("conversation_id", "model", "vector", "created_at")


def _upsert(dialect: str, rows: sa.Select) -> sa.Insert:
    """INSERT … SELECT ``rows`` that replaces the columns of a vector already stored."""
    columns = ["message_id", *_REPLACED]
    if dialect in ("mysql", "mariadb"):
        mysql = mysql_insert(V).from_select(columns, rows)
        return mysql.on_duplicate_key_update({c: mysql.inserted[c] for c in _REPLACED})
    dml = pg_insert if dialect == "postgresql" else sqlite_insert
    statement = dml(V).from_select(columns, rows)
    return statement.on_conflict_do_update(
        index_elements=[V.c.message_id],
        set_={c: statement.excluded[c] for c in _REPLACED},
    )
