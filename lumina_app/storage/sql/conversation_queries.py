"""The cold store's reads: conversations and messages as the memory layer's repositories
ask for them (``memory/``: the lookup, the conversation reads, run inspection, summaries).
The cold store itself (``cold_store.py``) writes and reads the window only: one road for
reads, one for writes."""

from __future__ import annotations

import base64
import contextlib
import functools
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa

from lumina_app.domain import (
    ConversationInfo,
    ConversationNotFound,
    ConversationStatus,
    InvalidInput,
    MessageStatus,
    Msg,
    MsgRole,
    Summary,
)
from lumina_app.domain.ids import ConversationPk
from lumina_app.domain.search import terms as search_terms
from lumina_app.storage.sql import branches, summaries, writes
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.search import matching_conversations
from lumina_app.storage.sql.sqlite_inline import offloaded

_MAX_INT = 2**31 - 1  # INTEGER columns; PostgreSQL refuses to compare with larger values


@functools.cache
def _conversation_by_uuid(owned: bool, of_agent: bool) -> sa.Select:
    """A conversation by uuid (and owner, agent), built once per shape: every turn, title
    and page load reads one, and building a statement cost more than running it."""
    query = sa.select(C).where(C.c.uuid == sa.bindparam("_uuid"))
    if owned:
        query = query.where(C.c.owner == sa.bindparam("_owner"))
    if of_agent:
        query = query.where(C.c.agent_id == sa.bindparam("_agent"))
    return query


def _conversation(row: sa.Row) -> ConversationInfo:
    return ConversationInfo(
        id=row.id,
        uuid=row.uuid,
        agent_id=row.agent_id,
        title=row.title,
        status=ConversationStatus(row.status),
        message_count=row.message_count,
        tool_call_count=row.tool_call_count,
        last_seq=row.last_seq,
        owner=row.owner,
        created_at=row.created_at,
        updated_at=row.updated_at,
        parent_uuid=row.parent_uuid,
        forked_at_seq=row.forked_at_seq,
        temporary=bool((row.meta or {}).get(writes.TEMPORARY)),
        pinned=bool(row.pinned),
        archived_at=row.archived_at,
    )


def message_of(row: sa.Row) -> Msg:
    return Msg(
        id=row.id,
        role=MsgRole(row.role),
        content=row.content,
        seq=row.seq,
        turn_id=row.turn_id,
        status=MessageStatus(row.status),
        created_at=row.created_at,
        updated_at=row.updated_at,
        meta=row.meta or {},
    )


def encode_cursor(when: datetime, row_id: int) -> str:
    """A keyset cursor (the conversations' and the files' pages): the time and the row, base64."""
    raw = f"{when.isoformat()}|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """The time and row a cursor we issued names; anything else is a 422. Only what such a
    cursor can hold: an aware time, and a 32-bit row id in ASCII digits."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        stamp, last_id = base64.urlsafe_b64decode(padded.encode()).decode().split("|")
        when, row_id = datetime.fromisoformat(stamp), int(last_id)
    except (ValueError, UnicodeDecodeError, OverflowError) as exc:
        raise InvalidInput("malformed cursor") from exc
    valid_id = last_id.isascii() and last_id.isdigit() and 0 < row_id <= _MAX_INT
    if when.utcoffset() is None or not valid_id:
        raise InvalidInput("malformed cursor")
    return when, row_id


class ConversationQueries:
    """Reads of conversations, their messages and summaries; no writes."""

    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def get_conversation(
        self, conversation_uuid: str, *, owner: str | None = None, agent_id: str | None = None
    ) -> ConversationInfo:
        """Fetch one conversation; someone else's, or another agent's, is simply not found."""
        query = _conversation_by_uuid(owner is not None, agent_id is not None)
        params = {"_uuid": conversation_uuid, "_owner": owner, "_agent": agent_id}
        row = await self.db.first(query, params)
        if row is None:
            raise ConversationNotFound(conversation_uuid)
        return _conversation(row)

    async def list_conversations(
        self,
        *,
        agent_id: str | None = None,
        owner: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
        search: str | None = None,
        pinned: bool | None = None,
        archived: bool | None = None,
    ) -> tuple[list[ConversationInfo], str | None]:
        """Newest activity first, keyset-paginated on (updated_at, id); ``pinned`` and
        ``archived`` narrow it to those that are (true) or are not (false)."""
        query = sa.select(C)
        if agent_id is not None:
            query = query.where(C.c.agent_id == agent_id)
        if owner is not None:
            query = query.where(C.c.owner == owner)
        if pinned is not None:
            query = query.where(C.c.pinned == pinned)
        if archived is not None:
            query = query.where(
                C.c.archived_at.is_not(None) if archived else C.c.archived_at.is_(None)
            )
        if search:
            # Titles by substring (short, and already narrowed to one owner); messages
            # through the full-text index, never a scan of every message's text.
            pattern = (
                "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            )
            by_title = C.c.title.ilike(pattern, escape="\\")
            words = search_terms(search)
            if words:
                in_text = C.c.id.in_(matching_conversations(self.db.dialect, words))
                query = query.where(sa.or_(by_title, in_text))
            else:
                query = query.where(by_title)
        if cursor:
            when, row_id = decode_cursor(cursor)
            try:  # a time in UTC too (0001-01-01 at +14:00 is not)
                when = when.astimezone(UTC)
            except (ValueError, OverflowError) as exc:
                raise InvalidInput("malformed cursor") from exc
            query = query.where(
                sa.or_(C.c.updated_at < when, sa.and_(C.c.updated_at == when, C.c.id < row_id))
            )
        query = query.order_by(C.c.updated_at.desc(), C.c.id.desc()).limit(limit + 1)
        # A search scans message text: off the event loop's thread on SQLite.
        with offloaded() if search else contextlib.nullcontext():
            rows = await self.db.rows(query)
        items = [_conversation(r) for r in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            tail = items[-1]
            next_cursor = encode_cursor(tail.updated_at, tail.id)
        return items, next_cursor

    async def select_conversations(
        self,
        *,
        owner: str | None = None,
        agent_id: str | None = None,
        updated_before: datetime | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> list[ConversationInfo]:
        """Conversations by row id (oldest first), filtered: what a purge works through."""
        query = sa.select(C).where(C.c.id > after_id).order_by(C.c.id).limit(limit)
        if owner is not None:
            query = query.where(C.c.owner == owner)
        if agent_id is not None:
            query = query.where(C.c.agent_id == agent_id)
        if updated_before is not None:
            query = query.where(C.c.updated_at < updated_before)
        return [_conversation(row) for row in await self.db.rows(query)]

    async def agent_ids(self) -> list[str]:
        """Every agent id that has conversations."""
        query = sa.select(C.c.agent_id).distinct()
        return sorted(row.agent_id for row in await self.db.rows(query))

    async def branch_counts(self, conversation_pk: ConversationPk, groups: Sequence[int]) -> dict:
        """``group -> how many branches`` for edited questions' groups."""
        if not groups:
            return {}
        query = sa.select(M.c.seq, M.c.meta).where(
            M.c.conversation_id == conversation_pk,
            M.c.role == MsgRole.USER.value,
            M.c.meta["branchOf"].as_string().is_not(None),
        )
        rows = await self.db.rows(query)
        counts: dict[int, int] = {}
        for r in rows:
            group = (r.meta or {}).get("branchOf")
            if group in groups:
                counts[group] = max(counts.get(group, 0), int(r.meta.get("branch", 1)))
        return counts

    async def parked_messages(self, conversation_pk: ConversationPk) -> list[Msg]:
        """The rows of every branch not shown (parked), in seq order."""
        query = (
            sa.select(M)
            .where(M.c.conversation_id == conversation_pk, ~branches.NOT_PARKED)
            .order_by(M.c.seq)
        )
        return [message_of(r) for r in await self.db.rows(query)]

    async def page_messages(
        self,
        conversation_pk: ConversationPk,
        *,
        limit: int = 50,
        after_seq: int | None = None,
        before_seq: int | None = None,
        parked: bool = False,
    ) -> list[Msg]:
        """A page in seq order: forward from ``after_seq``, else the page before
        ``before_seq``; of the active branch unless ``parked``."""
        query = sa.select(M).where(M.c.conversation_id == conversation_pk)
        if not parked:
            query = query.where(branches.NOT_PARKED)
        if after_seq is not None:
            query = query.where(M.c.seq > after_seq).order_by(M.c.seq.asc()).limit(limit)
            return [message_of(r) for r in await self.db.rows(query)]
        if before_seq is not None:
            query = query.where(M.c.seq < before_seq)
        query = query.order_by(M.c.seq.desc()).limit(limit)
        rows = await self.db.rows(query)
        return [message_of(r) for r in reversed(rows)]

    async def messages_by_id(
        self, conversation_pk: ConversationPk, ids: Sequence[int]
    ) -> list[Msg]:
        """Messages of one conversation by id, in seq order (ids of others are ignored)."""
        if not ids:
            return []
        query = (
            sa.select(M)
            .where(M.c.conversation_id == conversation_pk, M.c.id.in_(list(ids)))
            .order_by(M.c.seq)
        )
        return [message_of(r) for r in await self.db.rows(query)]

    async def get_message(self, message_id: int) -> Msg | None:
        row = await self.db.first(sa.select(M).where(M.c.id == message_id))
        return message_of(row) if row else None

    async def conversation_uuid(self, conversation_pk: ConversationPk) -> str | None:
        return await self.db.scalar(sa.select(C.c.uuid).where(C.c.id == conversation_pk))

    async def latest_summary(
        self, conversation_pk: ConversationPk, *, before_seq: int | None = None
    ) -> Summary | None:
        return await summaries.latest(self.db, conversation_pk, before_seq=before_seq)
