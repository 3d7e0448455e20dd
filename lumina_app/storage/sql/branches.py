"""Branches of a conversation: a question edited in place, and switching between the
versions of it (``docs/API.md``, "Branches").

No row is ever deleted. Editing the question at seq ``s`` parks every active row from
``s`` on: it becomes ``superseded`` (out of every window, context, summary and search)
with ``meta.parked = {"at": g, "n": k, "status": <its status>}`` — ``g`` the branch group
(the seq of the first version of the question), ``k`` the branch being left. The new
question takes the next seq with ``meta.branchOf = g`` and ``meta.branch = n + 1``. A switch
parks the active branch the same way and gives the rows parked with ``(g, j)`` their
status back. A regenerate's superseded answers have no ``parked`` tag: never revived.
Each function is one transaction, the conversation row bumped first (its lock orders it
against any other writer).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lumina_app.domain import InvalidInput, MessageStatus, Msg, MsgRole, RunRecord
from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.sql import summaries, writes
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M

# A row of the active branch: not parked (a regenerate's superseded answers are, as ever).
NOT_PARKED = M.c.meta["parked"].as_string().is_(None)
_SUPERSEDED = MessageStatus.SUPERSEDED.value
_UPDATE = sa.update(M).where(M.c.id == sa.bindparam("_mid"))
_TOUCH = sa.update(C).where(C.c.id == sa.bindparam("_cid"))


def group_of(question: Msg) -> int:
    """The branch group of a question: the seq of its first version."""
    return int(question.meta.get("branchOf", question.seq))


def branch_of(question: Msg) -> int:
    return int(question.meta.get("branch", 1))


def edit_question(
    conn: Connection,
    conversation_pk: ConversationPk,
    original_seq: int,
    question: Msg,
    answer: Msg,
    run: RunRecord,
    bump: dict[str, Any],
) -> int:
    """Park the active rows from the question at ``original_seq`` on, drop the summaries
    reaching it, insert ``question`` (the next branch of its group) and the ``streaming``
    ``answer``, and the run. Returns the number of the new branch."""
    now: datetime = bump["updated_at"]
    last = writes.bump_last_seq(conn, conversation_pk, bump)
    original = _active_question(conn, conversation_pk, original_seq)
    group, left = group_of(original), branch_of(original)
    count = max(_branch_numbers(conn, conversation_pk, group), default=1)
    _park(conn, conversation_pk, original_seq, group, left, now, first=original)
    conn.execute(summaries.DROP_FROM, {"_cid": conversation_pk, "_from": original_seq})
    question.meta = {**question.meta, "branchOf": group, "branch": count + 1}
    writes.number([question, answer], last - 1, now)
    writes.insert_messages(conn, conversation_pk, [question, answer])
    writes.insert_run(conn, run, conversation_pk, [question, answer], now)
    return count + 1


def switch_branch(
    conn: Connection, conversation_pk: ConversationPk, group: int, branch: int, now: datetime
) -> int:
    """Make branch ``branch`` of ``group`` the active one. Returns the first seq whose
    state changed (what a window or summary from there on no longer matches); 0 when the
    branch was already active."""
    if conn.execute(_TOUCH.values(updated_at=now), {"_cid": conversation_pk}).rowcount == 0:
        raise InvalidInput("conversation not found")
    numbers = _branch_numbers(conn, conversation_pk, group)
    if branch not in numbers:
        raise InvalidInput(f"branch must be one of 1-{max(numbers, default=1)} of that question")
    current = _active_in_group(conn, conversation_pk, group)
    if current is None:
        raise InvalidInput("that question is not on the conversation's active branch")
    if branch_of(current) == branch:
        return 0
    _park(conn, conversation_pk, current.seq, group, branch_of(current), now)
    revived = _revive(conn, conversation_pk, group, branch, now)
    first = min([current.seq, *revived])
    conn.execute(summaries.DROP_FROM, {"_cid": conversation_pk, "_from": first})
    return first


def _active_question(conn: Connection, conversation_pk: ConversationPk, seq: int) -> Msg:
    row = conn.execute(
        sa.select(M.c.id, M.c.seq, M.c.meta, M.c.status, M.c.role).where(
            M.c.conversation_id == conversation_pk, M.c.seq == seq
        )
    ).first()
    if row is None or row.role != MsgRole.USER.value or row.status == _SUPERSEDED:
        raise InvalidInput("only a question on the conversation's active branch can be edited")
    return Msg(MsgRole.USER, "", id=row.id, seq=row.seq, meta=dict(row.meta or {}))


def _branch_numbers(conn: Connection, conversation_pk: ConversationPk, group: int) -> set[int]:
    """The branch numbers the questions of ``group`` carry (a never-edited question: {1})."""
    rows = conn.execute(
        sa.select(M.c.seq, M.c.meta).where(
            M.c.conversation_id == conversation_pk,
            M.c.role == MsgRole.USER.value,
            M.c.seq >= group,
            sa.or_(M.c.seq == group, M.c.meta["branchOf"].as_integer() == group),
        )
    ).all()
    return {int((r.meta or {}).get("branch", 1)) for r in rows}


def _active_in_group(conn: Connection, conversation_pk: ConversationPk, group: int) -> Msg | None:
    rows = conn.execute(
        sa.select(M.c.id, M.c.seq, M.c.meta).where(
            M.c.conversation_id == conversation_pk,
            M.c.role == MsgRole.USER.value,
            M.c.status != _SUPERSEDED,
            sa.or_(M.c.seq == group, M.c.meta["branchOf"].as_integer() == group),
        )
    ).all()
    for r in rows:
        meta = dict(r.meta or {})
        if r.seq == group or meta.get("branchOf") == group:
            return Msg(MsgRole.USER, "", id=r.id, seq=r.seq, meta=meta)
    return None


def _park(
    conn: Connection,
    conversation_pk: ConversationPk,
    from_seq: int,
    group: int,
    branch: int,
    now: datetime,
    *,
    first: Msg | None = None,
) -> None:
    """Every active row from ``from_seq`` on becomes superseded, tagged ``(group, branch)``
    with the status it had; ``first`` (a question edited for the first time) learns its
    own branch number."""
    rows = conn.execute(
        sa.select(M.c.id, M.c.meta, M.c.status).where(
            M.c.conversation_id == conversation_pk,
            M.c.seq >= from_seq,
            M.c.status != _SUPERSEDED,
        )
    ).all()
    params = []
    for r in rows:
        meta = dict(r.meta or {})
        if first is not None and r.id == first.id:
            meta.setdefault("branchOf", group)
            meta.setdefault("branch", branch)
        meta["parked"] = {"at": group, "n": branch, "status": r.status}
        params.append({"_mid": r.id, "meta": meta, "status": _SUPERSEDED, "updated_at": now})
    if params:
        conn.execute(_UPDATE, params)


def _revive(
    conn: Connection, conversation_pk: ConversationPk, group: int, branch: int, now: datetime
) -> list[int]:
    """The rows parked with ``(group, branch)`` get their status back; their seqs."""
    rows = conn.execute(
        sa.select(M.c.id, M.c.seq, M.c.meta).where(
            M.c.conversation_id == conversation_pk,
            M.c.status == _SUPERSEDED,
            M.c.seq >= group,
            ~NOT_PARKED,
        )
    ).all()
    params, seqs = [], []
    for r in rows:
        meta = dict(r.meta or {})
        parked = meta.get("parked") or {}
        if parked.get("at") != group or parked.get("n") != branch:
            continue
        meta.pop("parked")
        status = parked.get("status") or MessageStatus.COMPLETE.value
        params.append({"_mid": r.id, "meta": meta, "status": status, "updated_at": now})
        seqs.append(r.seq)
    if params:
        conn.execute(_UPDATE, params)
    return seqs
