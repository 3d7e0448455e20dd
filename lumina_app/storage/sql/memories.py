"""Long-term memories in SQL (``lumina_memory``): every read and write is scoped to an
owner, so another owner's id finds nothing. Vectors are base64 text, as for messages."""

from __future__ import annotations

import base64
import dataclasses
import functools
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from lumina_app.domain import utcnow
from lumina_app.domain.memories import Memory, MemoryStatus
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import memories as T
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.sqlite_inline import offloaded

# A memory's columns in ``Memory``'s field order: ``_memory`` reads them by position.
_COLUMNS = tuple(T.c[field.name] for field in dataclasses.fields(Memory))


def _memory(r: sa.Row) -> Memory:
    """A row that starts with ``_COLUMNS`` as a memory."""
    return Memory(*r[:4], MemoryStatus(r.status), bool(r.pinned), *r[6 : len(_COLUMNS)])


def _scope(owner: str, agent_id: str | None) -> sa.ColumnElement[bool]:
    where = T.c.owner == owner
    return sa.and_(where, T.c.agent_id == agent_id) if agent_id is not None else where


def _encoded(vector: bytes | None) -> str | None:
    return base64.b64encode(vector).decode("ascii") if vector else None


def _values(
    *,
    owner: str,
    agent_id: str,
    text: str,
    pinned: bool,
    conversation_uuid: str | None,
    seq: int | None,
    model: str | None,
    vector: bytes | None,
    origin: str | None = None,
) -> dict[str, Any]:
    now = utcnow()
    return {
        "owner": owner,
        "agent_id": agent_id,
        "text": text,
        "status": MemoryStatus.ACTIVE.value,
        "pinned": pinned,
        "conversation_uuid": conversation_uuid,
        "seq": seq,
        "model": model,
        "vector": _encoded(vector),
        "origin": origin,
        "created_at": now,
        "updated_at": now,
        "valid_from": now,
    }


async def insert(db: SQLDatabase, **values: Any) -> Memory:
    """A new active memory (keyword arguments as :func:`_values` takes them)."""
    row = _values(**values)
    result = await db.write(sa.insert(T).values(row))
    return _memory_of(result.inserted_primary_key[0], row)


def _memory_of(memory_id: int, row: dict[str, Any]) -> Memory:
    return Memory(
        memory_id,
        row["owner"],
        row["agent_id"],
        row["text"],
        MemoryStatus.ACTIVE,
        row["pinned"],
        row["conversation_uuid"],
        row["seq"],
        row["created_at"],
        row["updated_at"],
        valid_from=row["valid_from"],
        origin=row["origin"],
    )


async def get(db: SQLDatabase, memory_id: int, *, owner: str) -> Memory | None:
    query = sa.select(*_COLUMNS).where(T.c.id == memory_id, T.c.owner == owner)
    row = await db.first(query)
    return _memory(row) if row else None


async def listing(
    db: SQLDatabase,
    *,
    owner: str,
    agent_id: str | None = None,
    statuses: Collection[MemoryStatus] = (MemoryStatus.ACTIVE,),
    limit: int = 200,
) -> list[Memory]:
    """An owner's memories (of one agent, if given), pinned first, newest first."""
    query = (
        sa.select(*_COLUMNS)
        .where(_scope(owner, agent_id), T.c.status.in_([s.value for s in statuses]))
        .order_by(T.c.pinned.desc(), T.c.updated_at.desc(), T.c.id.desc())
        .limit(limit)
    )
    return [_memory(r) for r in await db.rows(query)]


async def with_vectors(db: SQLDatabase, *, owner: str, agent_id: str | None) -> list[sa.Row]:
    """The active memories a search ranks, as rows (:func:`decoded` makes them memories with
    their vectors, off the event loop's thread: at thousands that is most of the cost)."""
    where = sa.and_(_scope(owner, agent_id), T.c.status == MemoryStatus.ACTIVE.value)
    query = sa.select(*_COLUMNS, T.c.model, T.c.vector).where(where)
    with offloaded():  # every memory of the owner: keep it off the event loop's thread
        return list(await db.rows(query))


def decoded(rows: Sequence[sa.Row], model: str) -> list[tuple[Memory, bytes | None]]:
    """Rows of :func:`with_vectors` as memories, each with its vector of ``model`` if any."""
    return [
        (_memory(r), base64.b64decode(r.vector) if r.vector and r.model == model else None)
        for r in rows
    ]


async def kept(db: SQLDatabase, *, owner: str) -> int:
    """How many memories the owner keeps: current ones and their history (not forgotten)."""
    query = sa.select(sa.func.count()).where(
        T.c.owner == owner,
        T.c.status.in_([MemoryStatus.ACTIVE.value, MemoryStatus.SUPERSEDED.value]),
    )
    return int(await db.scalar(query))


async def source_deleted(
    db: SQLDatabase,
    *,
    owner: str,
    conversation_uuid: str,
    origin: str,
    conversation_pk: int | None = None,
) -> int:
    """The owner's memories learnt in a conversation (with ``conversation_pk``: from one of
    its messages no longer there) unlinked from it and marked ``origin``; how many were.
    Their time is kept (their place among the newest does not change)."""
    where = sa.and_(T.c.owner == owner, T.c.conversation_uuid == conversation_uuid)
    if conversation_pk is not None:
        there = sa.select(M.c.seq).where(M.c.conversation_id == conversation_pk)
        where = sa.and_(where, T.c.seq.is_not(None), T.c.seq.not_in(there))
    query = sa.update(T).where(where).values(conversation_uuid=None, seq=None, origin=origin)
    return (await db.write(query)).rowcount


async def stamps_since(
    db: SQLDatabase, *, owner: str, agent_id: str | None, since: datetime
) -> list[tuple[int, MemoryStatus, datetime]]:
    """(id, status, updated_at) of the memories of any status changed at or after ``since``
    (read from the owner index alone: what a kept index checks before reading any row)."""
    query = sa.select(T.c.id, T.c.status, T.c.updated_at).where(
        _scope(owner, agent_id),
        T.c.status.in_([s.value for s in MemoryStatus]),  # the index's column order
        T.c.updated_at >= since,
    )
    found = await db.rows(query)
    return [(r.id, MemoryStatus(r.status), r.updated_at) for r in found]


async def with_vectors_by_ids(
    db: SQLDatabase, ids: Sequence[int], *, owner: str, model: str
) -> list[tuple[Memory, bytes | None]]:
    """The owner's memories of ``ids`` (any status), with their vector of ``model``."""
    if not ids:
        return []
    return await _with_vectors(db, sa.and_(T.c.id.in_(list(ids)), T.c.owner == owner), model)


async def _with_vectors(
    db: SQLDatabase, where: sa.ColumnElement[bool], model: str
) -> list[tuple[Memory, bytes | None]]:
    query = sa.select(*_COLUMNS, T.c.model, T.c.vector).where(where)
    rows = await db.rows(query)
    return [
        (_memory(r), base64.b64decode(r.vector) if r.vector and r.model == model else None)
        for r in rows
    ]


async def version(db: SQLDatabase, *, owner: str, agent_id: str | None) -> tuple[object, ...]:
    """(active count, last change, last id) of an owner's memories: what a cached index of
    them must still match (any add, edit, pin, supersede or delete moves one of them)."""
    params = {"_owner": owner, "_agent": agent_id}
    return tuple(await db.first(_version_query(agent_id is not None), params))


@functools.cache
def _version_query(of_agent: bool) -> sa.Select:
    """Built once per shape: every turn of an agent with long-term memory reads it."""
    query = sa.select(sa.func.count(), sa.func.max(T.c.updated_at), sa.func.max(T.c.id)).where(
        T.c.owner == sa.bindparam("_owner"), T.c.status == MemoryStatus.ACTIVE.value
    )
    return query.where(T.c.agent_id == sa.bindparam("_agent")) if of_agent else query


async def by_ids(db: SQLDatabase, ids: Sequence[int], *, owner: str) -> list[Memory]:
    """Memories by id, any status, in the order of ``ids`` (a run's recorded context)."""
    if not ids:
        return []
    query = sa.select(*_COLUMNS).where(T.c.id.in_(list(ids)), T.c.owner == owner)
    found = {r.id: _memory(r) for r in await db.rows(query)}
    return [found[i] for i in ids if i in found]


async def update(
    db: SQLDatabase,
    memory_id: int,
    *,
    owner: str,
    text: str | None = None,
    pinned: bool | None = None,
    status: MemoryStatus | None = None,
    model: str | None = None,
    vector: bytes | None = None,
) -> bool:
    """Change a memory that is not deleted; False when there is none such of ``owner``."""
    values: dict[str, Any] = {"updated_at": utcnow()}
    if text is not None:
        values |= {"text": text, "model": model, "vector": _encoded(vector)}
    if pinned is not None:
        values["pinned"] = pinned
    if status is not None:
        values["status"] = status.value
    query = (
        sa.update(T)
        .where(T.c.id == memory_id, T.c.owner == owner, T.c.status != MemoryStatus.DELETED.value)
        .values(values)
    )
    return (await db.write(query)).rowcount > 0


async def supersede(db: SQLDatabase, old_id: int, **values: Any) -> Memory | None:
    """In one transaction: the new fact, valid from now, and the old one (still active, of
    the same owner) closed: superseded by it, valid until now. None when the old one is not
    there to replace."""
    row = _values(**values)
    async with db.begin() as conn:
        old = sa.select(T.c.pinned).where(
            T.c.id == old_id, T.c.owner == row["owner"], T.c.status == MemoryStatus.ACTIVE.value
        )
        found = (await conn.execute(old)).first()
        if found is None:
            return None
        row["pinned"] = row["pinned"] or bool(found.pinned)
        new_id = (await conn.execute(sa.insert(T).values(row))).inserted_primary_key[0]
        await conn.execute(
            sa.update(T)
            .where(T.c.id == old_id)
            .values(
                status=MemoryStatus.SUPERSEDED.value,
                superseded_by=new_id,
                valid_until=row["valid_from"],
                updated_at=row["updated_at"],
            )
        )
    return _memory_of(new_id, row)


async def replaced(
    db: SQLDatabase, ids: Sequence[int], *, owner: str, depth: int = 100
) -> dict[int, list[Memory]]:
    """For each of ``ids``: the earlier versions it replaced, newest first (``superseded_by``
    walked backwards, one query a generation; a deleted version is passed through, not
    returned)."""
    found: dict[int, list[Memory]] = {i: [] for i in ids}
    frontier = {i: i for i in ids}  # a version → the memory of ``ids`` it leads to
    seen = set(frontier)
    async with db.connect() as conn:
        for _ in range(depth):
            if not frontier:
                break
            query = sa.select(*_COLUMNS).where(
                T.c.owner == owner, T.c.superseded_by.in_(list(frontier))
            )
            older: dict[int, int] = {}
            for r in (await conn.execute(query)).all():
                root = frontier[r.superseded_by]
                older[r.id] = root
                if r.status != MemoryStatus.DELETED.value:
                    found[root].append(_memory(r))
            frontier = {i: root for i, root in older.items() if i not in seen}
            seen.update(frontier)
    for versions in found.values():
        versions.sort(key=lambda m: (m.valid_from or m.created_at, m.id), reverse=True)
    return found


async def newest_of(db: SQLDatabase, memory_id: int, *, owner: str, depth: int = 100) -> int:
    """The id of the newest version of a memory (``superseded_by`` followed forwards)."""
    seen = {memory_id}
    async with db.connect() as conn:
        for _ in range(depth):
            query = sa.select(T.c.superseded_by).where(T.c.id == memory_id, T.c.owner == owner)
            newer = (await conn.execute(query)).scalar()
            if newer is None or newer in seen:
                break
            seen.add(newer)
            memory_id = newer
    return memory_id


async def delete_many(db: SQLDatabase, ids: Sequence[int], *, owner: str) -> int:
    """The owner's memories of ``ids`` marked deleted (those not already); how many were."""
    if not ids:
        return 0
    query = (
        sa.update(T)
        .where(T.c.id.in_(list(ids)), T.c.owner == owner, T.c.status != MemoryStatus.DELETED.value)
        .values(status=MemoryStatus.DELETED.value, updated_at=utcnow())
    )
    return (await db.write(query)).rowcount


def _closed_at(memory: Memory) -> datetime | None:
    """An archived memory's end of validity when its file has none: a superseded one was
    replaced when it last changed."""
    return memory.updated_at if memory.status is MemoryStatus.SUPERSEDED else None


async def forget_all(db: SQLDatabase, *, owner: str, agent_id: str | None) -> int:
    """Every memory of the owner (of one agent, if given) marked deleted; how many were."""
    query = (
        sa.update(T)
        .where(_scope(owner, agent_id), T.c.status != MemoryStatus.DELETED.value)
        .values(status=MemoryStatus.DELETED.value, updated_at=utcnow())
    )
    return (await db.write(query)).rowcount


async def every(db: SQLDatabase, *, agent_id: str | None = None) -> list[Memory]:
    """Every owner's memories (of one agent, if given), any status: what an export writes."""
    query = sa.select(*_COLUMNS).order_by(T.c.agent_id, T.c.owner, T.c.id)
    if agent_id is not None:
        query = query.where(T.c.agent_id == agent_id)
    with offloaded():
        return [_memory(r) for r in await db.rows(query)]


async def insert_imported(
    db: SQLDatabase,
    memories: Sequence[Memory],
    vectors: Sequence[tuple[str | None, bytes | None]],
    *,
    owner: str,
    agent_id: str,
    known: dict[int, int],
) -> dict[int, int]:
    """In one transaction: ``memories`` (from an archive, ids its own) inserted for
    ``owner`` with their status, pin, source and times; ``superseded_by`` re-pointed at the
    new rows (or at the ``known`` rows a file id already matched). Returns file id → row id."""
    made = dict(known)
    with offloaded():
        async with db.begin() as conn:
            for memory, (model, vector) in zip(memories, vectors, strict=True):
                row = {
                    "owner": owner,
                    "agent_id": agent_id,
                    "text": memory.text,
                    "status": memory.status.value,
                    "pinned": memory.pinned,
                    "conversation_uuid": memory.conversation_uuid,
                    "seq": memory.seq,
                    "model": model,
                    "vector": _encoded(vector),
                    "origin": memory.origin,
                    "created_at": memory.created_at,
                    "updated_at": memory.updated_at,
                    "valid_from": memory.valid_from or memory.created_at,
                    "valid_until": memory.valid_until or _closed_at(memory),
                }
                result = await conn.execute(sa.insert(T).values(row))
                made[memory.id] = result.inserted_primary_key[0]
            for memory in memories:
                if memory.superseded_by in made:
                    await conn.execute(
                        sa.update(T)
                        .where(T.c.id == made[memory.id])
                        .values(superseded_by=made[memory.superseded_by])
                    )
    return made
