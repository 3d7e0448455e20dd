"""Forking a conversation: a new conversation holding a copy of another's messages (and
the summaries that cover only them) up to a seq, in one transaction.

The copy keeps every seq, turn id, status, timestamp and meta, so a fork reads exactly
like its parent up to the fork point; an answer still streaming there is copied as
``interrupted`` (the fork has no run to finish it). The rows are copied by
INSERT … SELECT: the text never leaves the database, whatever the conversation's size.

Forking at an answer that a regenerated one replaced (``superseded``) continues from
that version: in the fork, whose copy ends before the replacement, it is live again.
Only the fork's last turn can be in that state: a regenerate only ever replaces the
newest answer, so every earlier turn's replacement precedes what follows it.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lumina_app.domain import ConversationInfo, MessageStatus, MsgRole
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import files as F
from lumina_app.storage.sql.models import message_files as L
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.models import summaries as S
from lumina_app.storage.sql.writes import insert_conversation

_COPIED_MESSAGE_COLUMNS = ["seq", "turn_id", "role", "content", "created_at", "updated_at", "meta"]
_COPIED_SUMMARY_COLUMNS = ["covered_to_seq", "text", "model", "created_at"]


def copy_conversation(
    conn: Connection, source_id: int, fork: ConversationInfo, at_seq: int
) -> None:
    """Insert ``fork`` (``ConversationInfo.new``) and copy ``source_id``'s messages with
    seq ≤ ``at_seq`` and its summaries covering no more than that; sets the fork's id and
    counters."""
    insert_conversation(conn, fork)
    status = sa.case(
        (M.c.status == MessageStatus.STREAMING.value, MessageStatus.INTERRUPTED.value),
        else_=M.c.status,
    )
    rows = sa.select(
        sa.literal(fork.id).label("conversation_id"),
        *(M.c[name] for name in _COPIED_MESSAGE_COLUMNS),
        status.label("status"),
    ).where(M.c.conversation_id == source_id, M.c.seq <= at_seq)
    conn.execute(
        sa.insert(M).from_select(["conversation_id", *_COPIED_MESSAGE_COLUMNS, "status"], rows)
    )
    summaries = sa.select(
        sa.literal(fork.id).label("conversation_id"),
        *(S.c[name] for name in _COPIED_SUMMARY_COLUMNS),
    ).where(S.c.conversation_id == source_id, S.c.covered_to_seq <= at_seq)
    conn.execute(sa.insert(S).from_select(["conversation_id", *_COPIED_SUMMARY_COLUMNS], summaries))
    copy_links(conn, source_id, fork, at_seq)
    copied = conn.execute(
        sa.select(
            sa.func.count(),
            sa.func.coalesce(sa.func.max(M.c.seq), 0),
            sa.func.coalesce(sa.func.sum(sa.case((M.c.role == MsgRole.TOOL.value, 1), else_=0)), 0),
        ).where(M.c.conversation_id == fork.id)
    ).one()
    fork.message_count, fork.last_seq, fork.tool_call_count = (int(v) for v in copied)
    _revive_last_version(conn, fork.id, at_seq)
    conn.execute(
        sa.update(C)
        .where(C.c.id == fork.id)
        .values(
            message_count=fork.message_count,
            last_seq=fork.last_seq,
            tool_call_count=fork.tool_call_count,
        )
    )


def copy_links(conn: Connection, source_id: int, fork: ConversationInfo, at_seq: int) -> None:
    """The copied questions' files are the fork's too (of its owner's files only): a
    file stays while either conversation still has a message that carries it."""
    links = (
        sa.select(sa.literal(fork.id), L.c.seq, L.c.file_pk, L.c.position)
        .join(F, F.c.id == L.c.file_pk)
        .where(L.c.conversation_id == source_id, L.c.seq <= at_seq, F.c.owner == fork.owner)
    )
    conn.execute(sa.insert(L).from_select(["conversation_id", "seq", "file_pk", "position"], links))


def _revive_last_version(conn: Connection, fork_id: int, at_seq: int) -> None:
    """If the fork's last turn holds only superseded answers, make the version the fork
    point belongs to live again (rows of one version follow its run's first answer)."""
    tail_turn = sa.select(M.c.turn_id).where(M.c.conversation_id == fork_id, M.c.seq == at_seq)
    rows = conn.execute(
        sa.select(M.c.id, M.c.seq, M.c.role, M.c.status, M.c.meta)
        .where(M.c.conversation_id == fork_id, M.c.turn_id == tail_turn.scalar_subquery())
        .order_by(M.c.seq)
    ).all()
    answers = [r for r in rows if r.role != MsgRole.USER.value]
    if not answers or any(r.status != MessageStatus.SUPERSEDED.value for r in answers):
        return
    version: dict[int, str | None] = {}  # row id -> the run that wrote it
    run = None
    for row in answers:
        if row.role == MsgRole.ASSISTANT.value:
            run = (row.meta or {}).get("runId")
        version[row.id] = run
    wanted = version[answers[-1].id]
    ids = [r.id for r in answers if version[r.id] == wanted]
    conn.execute(sa.update(M).where(M.c.id.in_(ids)).values(status=MessageStatus.COMPLETE.value))
