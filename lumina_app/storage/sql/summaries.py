"""Rolling summaries in SQL: each row covers a conversation from seq 1 to
``covered_to_seq``; the newest is the one contexts use, the older ones are history."""

from __future__ import annotations

import dataclasses

import sqlalchemy as sa

from lumina_app.domain import Summary, utcnow
from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import summaries as S

_FIELDS = [field.name for field in dataclasses.fields(Summary)]  # each one a column's name
# The summaries reaching seq ``_from`` of conversation ``_cid`` (what an edit, a regenerate
# or a switch of branch changed there must not live on in them).
DROP_FROM = sa.delete(S).where(
    S.c.conversation_id == sa.bindparam("_cid"), S.c.covered_to_seq >= sa.bindparam("_from")
)


def _summary(row: sa.Row) -> Summary:
    return Summary(**{name: getattr(row, name) for name in _FIELDS})


async def latest(
    db: SQLDatabase, conversation_pk: ConversationPk, *, before_seq: int | None = None
) -> Summary | None:
    """The newest summary (of those covering less than ``before_seq``, if given)."""
    query = sa.select(S).where(S.c.conversation_id == conversation_pk)
    if before_seq is not None:
        query = query.where(S.c.covered_to_seq < before_seq)
    query = query.order_by(S.c.covered_to_seq.desc(), S.c.id.desc()).limit(1)
    row = await db.first(query)
    return _summary(row) if row else None


async def get(db: SQLDatabase, summary_id: int) -> Summary | None:
    row = await db.first(sa.select(S).where(S.c.id == summary_id))
    return _summary(row) if row else None


async def add(
    db: SQLDatabase, conversation_pk: ConversationPk, *, covered_to_seq: int, text: str, model: str
) -> Summary:
    values = {
        "conversation_id": conversation_pk,
        "covered_to_seq": covered_to_seq,
        "text": text,
        "model": model[:128],
        "created_at": utcnow(),
    }
    result = await db.write(sa.insert(S).values(values))
    return Summary(
        covered_to_seq=covered_to_seq,
        text=text,
        model=model[:128],
        id=result.inserted_primary_key[0],
        created_at=values["created_at"],
    )


async def all_of(db: SQLDatabase, conversation_pk: ConversationPk) -> list[Summary]:
    """Every summary of a conversation, oldest first (exports)."""
    query = sa.select(S).where(S.c.conversation_id == conversation_pk).order_by(S.c.id)
    return [_summary(r) for r in await db.rows(query)]
