"""The text of files carried by messages, found by its words (search and recall over
``lumina_file_text``, docs/FILES.md). Small queries of their own beside the messages'
full-text index, in three steps so that no text is read but the owner's: the newest links
from the owner's (or one conversation's) messages to their files, through the indexes (no
text read); which of those files' texts hold the words (by primary key, within a budget of
bytes); the texts of the newest such files. What they read is bounded, and grows with the
owner's files, never with the messages."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import sqlalchemy as sa

from lumina_app.domain import MessageStatus, MsgRole
from lumina_app.domain.ids import ConversationPk
from lumina_app.domain.search import FileTextMatch
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import file_texts as T
from lumina_app.storage.sql.models import files as F
from lumina_app.storage.sql.models import message_files as L
from lumina_app.storage.sql.models import messages as M

_UNSEARCHED = (MessageStatus.STREAMING.value, "superseded")  # as search.py
MAX_WORDS = 16  # words a query filters texts by, at most
# The newest links (a message carrying a file) whose files' texts are looked in, per query,
# and the bytes of those files, at most: the texts are read by a LIKE (PostgreSQL's ILIKE
# reads some 30 MB/s), so what a query reads is bounded. Older files are not searched.
MAX_LINKS = 1000
MAX_SCANNED_BYTES = 32 * 1024 * 1024


async def matching_file_texts(
    db: SQLDatabase,
    words: Sequence[str],
    *,
    owner: str,
    every: bool,
    conversation_pk: ConversationPk | None = None,
    agent_id: str | None = None,
    limit: int = 20,
) -> list[FileTextMatch]:
    """Messages of the owner (of one conversation, of one agent) with a file whose text
    contains every word (``every``) or any of them, case-insensitively, as a substring
    (the caller checks word edges): newest message first, at most ``limit``."""
    if not any(words):
        return []
    return await db.read(reader(words, owner, every, conversation_pk, agent_id, limit))


def reader(
    words: Sequence[str],
    owner: str,
    every: bool,
    conversation_pk: ConversationPk | None,
    agent_id: str | None,
    limit: int,
) -> Callable[[sa.Connection], list[FileTextMatch]]:
    """:func:`matching_file_texts` as one read in three steps (``SQLDatabase.read``), or to
    run after another read on the same connection (``search.search_messages``)."""
    found = [w for w in dict.fromkeys(words) if w][:MAX_WORDS]
    links_query = _links(conversation_pk is not None, agent_id is not None)
    scope = {"owner": owner, "conversation_pk": conversation_pk, "agent_id": agent_id}

    def read(conn: sa.Connection) -> list[FileTextMatch]:
        links = conn.execute(links_query, scope).all() if found else []
        holding = _holding(conn, _within_budget(links), found, every) if links else set()
        chosen = [r for r in links if r.blob_id in holding][:limit]
        texts = _texts(conn, {r.blob_id for r in chosen})
        return [_match(r, texts.get(r.blob_id, "")) for r in chosen]

    return read


def _within_budget(links: Sequence[sa.Row]) -> list[int]:
    """The newest links' blobs, each once, while their files' bytes fit MAX_SCANNED_BYTES
    (the newest always: a file is at most LUMINA_MAX_FILE_BYTES)."""
    blobs: dict[int, None] = {}
    spent = 0
    for row in links:
        if row.blob_id in blobs:
            continue
        spent += row.size
        if blobs and spent > MAX_SCANNED_BYTES:
            break
        blobs[row.blob_id] = None
    return list(blobs)


@cache
def _links(conversation: bool, agent: bool) -> sa.Select:
    """The newest links to the owner's files (no text read) in a scope of this shape (of one
    conversation, of one agent), its values left to bind: built once, not at each search
    (building it took longer than running it)."""
    owner = sa.bindparam("owner")
    query = (
        sa.select(
            C.c.uuid,
            C.c.title,
            C.c.id.label("conversation_pk"),
            M.c.id,
            M.c.seq,
            M.c.role,
            M.c.created_at,
            F.c.file_id,
            F.c.name,
            F.c.blob_id,
            F.c.size,
        )
        .select_from(L)
        .join(F, F.c.id == L.c.file_pk)
        .join(C, C.c.id == L.c.conversation_id)
        .join(M, sa.and_(M.c.conversation_id == L.c.conversation_id, M.c.seq == L.c.seq))
        .where(F.c.owner == owner, C.c.owner == owner, M.c.status.not_in(_UNSEARCHED))
    )
    if conversation:
        query = query.where(L.c.conversation_id == sa.bindparam("conversation_pk"))
    if agent:
        query = query.where(C.c.agent_id == sa.bindparam("agent_id"))
    return query.order_by(M.c.id.desc(), L.c.position).limit(MAX_LINKS)


def _holding(
    conn: sa.Connection, blobs: Sequence[int], words: Sequence[str], every: bool
) -> set[int]:
    """Which of these blobs have a text (``ok``) containing the words."""
    likes = [T.c.text.ilike("%" + _escaped(w) + "%", escape="\\") for w in words]
    query = sa.select(T.c.blob_id).where(
        T.c.blob_id.in_(blobs),
        T.c.status == "ok",
        sa.and_(*likes) if every else sa.or_(*likes),
    )
    return set(conn.execute(query).scalars().all())


def _texts(conn: sa.Connection, blobs: set[int]) -> dict[int, str]:
    if not blobs:
        return {}
    query = sa.select(T.c.blob_id, T.c.text).where(T.c.blob_id.in_(sorted(blobs)))
    return {r.blob_id: r.text or "" for r in conn.execute(query).all()}


def _escaped(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _match(row: sa.Row, text: str) -> FileTextMatch:
    return FileTextMatch(
        conversation_uuid=row.uuid,
        conversation_title=row.title or "",
        conversation_pk=row.conversation_pk,
        message_id=row.id,
        seq=row.seq,
        role=MsgRole(row.role),
        created_at=row.created_at,
        file_id=row.file_id,
        file_name=row.name,
        text=text,
    )
