"""Answering a conversation's last question again: what the new answer's context is read
from, and the one transaction that replaces the old answer.

The old answer is never deleted: every row after the question (the answers of each tool
step, their TOOL rows) becomes ``superseded`` — kept for history, versions and exports,
out of every window, context, summary and search — and the new answer row takes the next
seq with the question's turn id, so the versions of an answer are the ASSISTANT rows of
one turn, in seq order. Summaries that reach the question (only possible when a single
turn outgrew the window) would carry the old answer into later contexts: they go.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lumina_app.domain import MessageStatus, Msg, MsgRole, RunRecord
from lumina_app.domain.ids import ConversationPk
from lumina_app.domain.versions import AnswerRow
from lumina_app.storage.sql import summaries, writes
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import messages as M

_SUPERSEDE = (
    sa.update(M)
    .where(
        M.c.conversation_id == sa.bindparam("_cid"),
        M.c.seq > sa.bindparam("_after"),
        M.c.status != MessageStatus.SUPERSEDED.value,
    )
    .values(status=MessageStatus.SUPERSEDED.value)
)


def answer_again(
    conn: Connection,
    conversation_pk: ConversationPk,
    question: Msg,
    answer: Msg,
    run: RunRecord,
    bump: dict[str, Any],
) -> int:
    """Supersede every row after ``question``, drop the summaries reaching it, insert the
    ``streaming`` ``answer`` with the next seq and the run (pointing at the existing
    question). The conversation row is bumped first: its lock orders this against any
    other writer. Returns how many rows were superseded."""
    now: datetime = bump["updated_at"]
    last = writes.bump_last_seq(conn, conversation_pk, bump)
    superseded = conn.execute(
        _SUPERSEDE, {"_cid": conversation_pk, "_after": question.seq, "updated_at": now}
    ).rowcount
    conn.execute(summaries.DROP_FROM, {"_cid": conversation_pk, "_from": question.seq})
    writes.number([answer], last, now)
    writes.insert_messages(conn, conversation_pk, [answer])
    writes.insert_run(conn, run, conversation_pk, [question, answer], now)
    return superseded


async def answer_rows(
    db: SQLDatabase, conversation_pk: ConversationPk, turn_ids: Sequence[str]
) -> list[AnswerRow]:
    """The rows after the questions of some turns, in seq order, without their text: what
    numbering their versions takes (``domain.versions``)."""
    if not turn_ids:
        return []
    query = (
        sa.select(M.c.seq, M.c.turn_id, M.c.role, M.c.meta)
        .where(
            M.c.conversation_id == conversation_pk,
            M.c.turn_id.in_(list(turn_ids)),
            M.c.role != MsgRole.USER.value,
        )
        .order_by(M.c.seq)
    )
    rows = await db.rows(query)
    return [
        AnswerRow(
            seq=r.seq,
            turn_id=r.turn_id,
            is_assistant=r.role == MsgRole.ASSISTANT.value,
            run_id=(r.meta or {}).get("runId"),
        )
        for r in rows
    ]
