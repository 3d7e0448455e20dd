"""Deleting one message of a conversation (the Conversations API's item delete), in one
transaction.

The conversation row is locked first (its ``last_seq`` is bumped by one, a seq no row takes):
that orders the delete against every other writer, and every warm session and hot window,
on any instance, sees a conversation whose ``last_seq`` moved and rebuilds from SQL. An
answer that asked for tools goes with the TOOL rows of its calls (a call is never left
without its results, nor results without their call). Summaries that reach the deleted
row go too: they may tell what it said, and the summary keeper writes a new one when the
window next moves. Vectors go with their messages. A conversation recorded ``running``
deletes nothing: the caller answers 409.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lumina_app.domain import ConversationNotFound, ConversationStatus, MsgRole
from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.cold_store import Deleted
from lumina_app.storage.sql import message_files, writes
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import message_vectors as V
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.models import summaries as S


def delete_message(
    conn: Connection, conversation_pk: ConversationPk, message_id: int, now: datetime
) -> Deleted:
    """Remove the message ``message_id`` of the conversation (and its calls' TOOL rows);
    nothing if it is not there (an empty ``Deleted``)."""
    # A write that changes nothing still takes the row's lock (and SQLite's write lock).
    locked = conn.execute(
        sa.update(C).where(C.c.id == conversation_pk).values(last_seq=C.c.last_seq)
    )
    if not locked.rowcount:
        raise ConversationNotFound(str(conversation_pk))
    status = conn.scalar(sa.select(C.c.status).where(C.c.id == conversation_pk))
    if status == ConversationStatus.RUNNING.value:
        return Deleted(busy=True)
    target = conn.execute(
        sa.select(M.c.id, M.c.seq, M.c.turn_id, M.c.role, M.c.meta).where(
            M.c.conversation_id == conversation_pk, M.c.id == message_id
        )
    ).first()
    if target is None:
        return Deleted()
    ids = [target.id, *_result_rows(conn, conversation_pk, target)]
    seqs = conn.scalars(sa.select(M.c.seq).where(M.c.id.in_(ids))).all()
    file_pks = message_files.unlink_messages(conn, conversation_pk, seqs)
    conn.execute(sa.delete(V).where(V.c.message_id.in_(ids)))
    conn.execute(sa.delete(M).where(M.c.id.in_(ids)))
    message_files.sweep(conn, file_pks)  # the files no other message links go with it
    conn.execute(
        sa.delete(S).where(S.c.conversation_id == conversation_pk, S.c.covered_to_seq >= target.seq)
    )
    calls = len(_calls(target))
    bump = {"_cid": conversation_pk, "_n": 1, "_tools": 0}
    last = writes.bump_last_seq(conn, conversation_pk, bump)
    conn.execute(
        sa.update(C)
        .where(C.c.id == conversation_pk)
        .values(
            # The bump counted one message more; take it back with the rows removed.
            message_count=C.c.message_count - 1 - len(ids),
            tool_call_count=sa.case(
                (C.c.tool_call_count > calls, C.c.tool_call_count - calls), else_=0
            ),
            updated_at=now,
        )
    )
    return Deleted(tuple(ids), (target.turn_id,), last)


def _calls(row: sa.Row) -> list[str]:
    if row.role != MsgRole.ASSISTANT.value:
        return []
    calls = (row.meta or {}).get("toolCalls")
    if not isinstance(calls, list):
        return []
    return [str(c.get("id")) for c in calls if isinstance(c, dict)]


def _result_rows(conn: Connection, conversation_pk: ConversationPk, target: sa.Row) -> list[int]:
    """The TOOL rows answering the calls of ``target`` (an answer that asked for tools)."""
    calls = set(_calls(target))
    if not calls:
        return []
    rows = conn.execute(
        sa.select(M.c.id, M.c.meta).where(
            M.c.conversation_id == conversation_pk,
            M.c.turn_id == target.turn_id,
            M.c.role == MsgRole.TOOL.value,
            M.c.seq > target.seq,
        )
    ).all()
    return [r.id for r in rows if (r.meta or {}).get("toolCallId") in calls]
