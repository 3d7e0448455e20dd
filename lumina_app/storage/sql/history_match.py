"""The gateway's history matching in SQL: an owner's conversations of an agent that opened
with a given question (``ix_lumina_conversation_opening``), their rows a client could have
seen (questions and shown answers, ``domain/transcript.py``), and the gateway's
per-conversation meta (the client's system prompt)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from lumina_app.domain import MessageStatus, Msg, MsgRole
from lumina_app.domain.ids import ConversationPk
from lumina_app.domain.transcript import SHOWN_ANSWER
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M

_SHOWN = [status.value for status in SHOWN_ANSWER]


async def candidates(
    db: SQLDatabase, *, owner: str, agent_id: str, opening: str, limit: int
) -> list[tuple[int, str]]:
    """(id, uuid) of the conversations that opened with that question, most recent first."""
    query = (
        sa.select(C.c.id, C.c.uuid)
        .where(C.c.owner == owner, C.c.agent_id == agent_id, C.c.opening_hash == opening)
        .order_by(C.c.updated_at.desc(), C.c.id.desc())
        .limit(limit)
    )
    return [(row.id, row.uuid) for row in await db.rows(query)]


async def by_session_key(
    db: SQLDatabase, *, owner: str, agent_id: str, key_hash: str
) -> tuple[int, str] | None:
    """(id, uuid) of the owner's newest conversation of that agent whose gateway meta holds
    ``key_hash`` (a sha256 hex, so a plain substring match is exact enough)."""
    query = (
        sa.select(C.c.id, C.c.uuid)
        .where(
            C.c.owner == owner,
            C.c.agent_id == agent_id,
            sa.cast(C.c.meta, sa.Text).like(f"%{key_hash}%"),
        )
        .order_by(C.c.updated_at.desc(), C.c.id.desc())
        .limit(1)
    )
    row = await db.first(query)
    return (row.id, row.uuid) if row else None


async def seen_rows(
    db: SQLDatabase, conversation_pks: Sequence[ConversationPk]
) -> dict[int, list[Msg]]:
    """Per conversation, its questions and shown answers in seq order (one query)."""
    if not conversation_pks:
        return {}
    query = (
        sa.select(M.c.conversation_id, M.c.seq, M.c.turn_id, M.c.role, M.c.content, M.c.status)
        .where(
            M.c.conversation_id.in_(list(conversation_pks)),
            sa.or_(
                M.c.role == MsgRole.USER.value,
                sa.and_(M.c.role == MsgRole.ASSISTANT.value, M.c.status.in_(_SHOWN)),
            ),
        )
        .order_by(M.c.conversation_id, M.c.seq)
    )
    found: dict[int, list[Msg]] = {cid: [] for cid in conversation_pks}
    for row in await db.rows(query):
        found[row.conversation_id].append(
            Msg(
                MsgRole(row.role),
                row.content,
                seq=row.seq,
                turn_id=row.turn_id,
                status=MessageStatus(row.status),
            )
        )
    return found


async def gateway_meta(db: SQLDatabase, conversation_pk: ConversationPk) -> dict[str, Any]:
    meta = await db.scalar(sa.select(C.c.meta).where(C.c.id == conversation_pk))
    return meta or {}


async def set_gateway_meta(
    db: SQLDatabase, conversation_pk: ConversationPk, *, opening: str | None, meta: dict[str, Any]
) -> None:
    """Set the opening hash (if given) and the meta; touches nothing else (not the order)."""
    values: dict[str, Any] = {"meta": meta}
    if opening is not None:
        values["opening_hash"] = opening
    await db.write(sa.update(C).where(C.c.id == conversation_pk).values(values))
