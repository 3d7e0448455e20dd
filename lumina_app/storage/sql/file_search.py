"""The text of files carried by messages, found by its words (search and recall over
``lumina_file_text``, docs/FILES.md). Its own small query beside the messages' full-text
index: from the owner's (or one conversation's) links to files, through primary keys, to
the texts that contain the words, newest message first. What it reads grows with the
owner's files, never with the messages."""

from __future__ import annotations

from collections.abc import Sequence

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
from lumina_app.storage.sql.sqlite_inline import offloaded

_UNSEARCHED = (MessageStatus.STREAMING.value, "superseded")  # as search.py
MAX_WORDS = 16  # words a query filters texts by, at most


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
    (the caller checks word edges): newest message first, at most ``limit`` rows."""
    found = [w.lower() for w in dict.fromkeys(words) if w][:MAX_WORDS]
    if not found:
        return []
    text = sa.func.lower(T.c.text)
    likes = [text.contains(w, autoescape=True) for w in found]
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
            T.c.text,
        )
        .select_from(L)
        .join(C, C.c.id == L.c.conversation_id)
        .join(M, sa.and_(M.c.conversation_id == L.c.conversation_id, M.c.seq == L.c.seq))
        .join(F, F.c.id == L.c.file_pk)
        .join(T, T.c.blob_id == F.c.blob_id)
        .where(C.c.owner == owner, F.c.owner == owner, T.c.status == "ok")
        .where(M.c.status.not_in(_UNSEARCHED))
        .where(sa.and_(*likes) if every else sa.or_(*likes))
    )
    if conversation_pk is not None:
        query = query.where(L.c.conversation_id == conversation_pk)
    if agent_id is not None:
        query = query.where(C.c.agent_id == agent_id)
    query = query.order_by(M.c.id.desc(), L.c.position).limit(limit)
    with offloaded():
        async with db.connect() as conn:
            rows = (await conn.execute(query)).all()
    return [
        FileTextMatch(
            conversation_uuid=r.uuid,
            conversation_title=r.title or "",
            conversation_pk=ConversationPk(r.conversation_pk),
            message_id=r.id,
            seq=r.seq,
            role=MsgRole(r.role),
            created_at=r.created_at,
            file_id=r.file_id,
            file_name=r.name,
            text=r.text or "",
        )
        for r in rows
    ]
