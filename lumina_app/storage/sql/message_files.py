"""Files on messages in SQL: the links from a question (conversation and seq) to the
owner's files, and the sweep that deletes a file once no message links it any more (its
blob, chunks and text with it when no other file row uses the blob).

The sweep's functions take the caller's connection: a conversation's or a message's
deletion removes its links and sweeps in its own transaction (``cold_store``,
``message_delete``), so a file never outlives its last message by a crash in between."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.files import StoredFile
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.files import _stored
from lumina_app.storage.sql.models import file_blobs as B
from lumina_app.storage.sql.models import file_chunks as K
from lumina_app.storage.sql.models import file_texts as T
from lumina_app.storage.sql.models import files as F
from lumina_app.storage.sql.models import message_files as L

MAX_IDS = 100  # more ids than any send may carry (LUMINA_MAX_FILES_PER_MESSAGE <= 100)


class MessageFileStore:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def owned(self, owner: str, file_ids: Sequence[str]) -> list[StoredFile]:
        wanted = list(dict.fromkeys(file_ids))[:MAX_IDS]
        if not wanted:
            return []
        query = sa.select(F).where(F.c.owner == owner, F.c.file_id.in_(wanted))
        return [_stored(row) for row in await self.db.rows(query)]

    async def link(
        self, owner: str, conversation_pk: ConversationPk, seq: int, file_ids: Sequence[str]
    ) -> int:
        """One ``INSERT … SELECT`` per file, in one transaction: a file deleted since links
        nothing; a conversation deleted since (its key gone) links nothing at all."""
        linked = 0
        try:
            async with self.db.begin() as conn:
                for position, file_id in enumerate(file_ids):
                    pick = sa.select(
                        sa.literal(conversation_pk), sa.literal(seq), F.c.id, sa.literal(position)
                    ).where(F.c.owner == owner, F.c.file_id == file_id)
                    insert = sa.insert(L).from_select(
                        ["conversation_id", "seq", "file_pk", "position"], pick
                    )
                    linked += (await conn.execute(insert)).rowcount or 0
        except IntegrityError:
            return 0
        return linked


def unlink_conversations(conn: Connection, conversation_pks: Sequence[int]) -> list[int]:
    """Remove the links of the conversations' messages; the files they named."""
    where = L.c.conversation_id.in_(conversation_pks)
    file_pks = conn.scalars(sa.select(L.c.file_pk).where(where).distinct()).all()
    conn.execute(sa.delete(L).where(where))
    return list(file_pks)


def unlink_messages(conn: Connection, conversation_pk: int, seqs: Iterable[int]) -> list[int]:
    """Remove the links of the messages at ``seqs``; the files they named."""
    where = sa.and_(L.c.conversation_id == conversation_pk, L.c.seq.in_(list(seqs)))
    file_pks = conn.scalars(sa.select(L.c.file_pk).where(where).distinct()).all()
    if file_pks:
        conn.execute(sa.delete(L).where(where))
    return list(file_pks)


def sweep(conn: Connection, file_pks: Sequence[int]) -> int:
    """Delete those of ``file_pks`` no message links any more, and each one's blob (its
    chunks, its text) when no other file row uses it. How many files went."""
    if not file_pks:
        return 0
    still = sa.select(L.c.file_pk).where(L.c.file_pk.in_(file_pks)).distinct()
    gone = [pk for pk in file_pks if pk not in set(conn.scalars(still).all())]
    if not gone:
        return 0
    blobs = set(conn.scalars(sa.select(F.c.blob_id).where(F.c.id.in_(gone))).all())
    conn.execute(sa.delete(F).where(F.c.id.in_(gone)))
    used = sa.select(F.c.blob_id).where(F.c.blob_id.in_(blobs)).distinct()
    free = list(blobs - set(conn.scalars(used).all()))
    if free:
        conn.execute(sa.delete(T).where(T.c.blob_id.in_(free)))
        conn.execute(sa.delete(K).where(K.c.blob_id.in_(free)))
        conn.execute(sa.delete(B).where(B.c.id.in_(free)))
    return len(gone)
