"""The SQL cold store: the system of record for conversations and every message
(``storage.cold_store.ColdStore`` is its contract). How its write transactions reach the
database is the write strategy it is given (``write_paths``), chosen once per database."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from lumina_app.domain import (
    ConversationInfo,
    ConversationNotFound,
    ConversationStatus,
    MessageStatus,
    Msg,
    MsgRole,
    RunRecord,
    Summary,
    utcnow,
)
from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.cold_store import Deleted
from lumina_app.storage.sql import (
    branches,
    forks,
    message_delete,
    message_files,
    regenerate,
    summaries,
    write_paths,
    writes,
)
from lumina_app.storage.sql.conversation_queries import message_of
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.flush_batch import FlushBatch
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.models import runs as R
from lumina_app.storage.sql.models import summaries as S
from lumina_app.storage.sql.sqlite_inline import offloaded

# Rows no context holds: an answer still growing, and one a regenerated answer replaced.
_OUT_OF_CONTEXT = (MessageStatus.STREAMING.value, MessageStatus.SUPERSEDED.value)


class SQLColdStore:
    """Async data functions over conversations and messages. Every write is one
    transaction; runs and idempotency keys have stores of their own on the same database.
    ``write_path``: how the transactions run (default: ``write_paths.for_database(db)``)."""

    def __init__(
        self,
        db: SQLDatabase,
        *,
        write_path: write_paths.TransactionWrites | None = None,
        flush_window: float = 0.05,
    ) -> None:
        self.db = db
        self.write_path = write_path or write_paths.for_database(db)
        transact = self.write_path.transact
        self._flushes = FlushBatch(
            lambda batch: transact(writes.flush_answers, batch), window=flush_window
        )

    # -- conversations -------------------------------------------------------------

    async def create_conversation(
        self,
        *,
        agent_id: str,
        title: str = "",
        owner: str = "",
        conversation_uuid: str | None = None,
        created_at: datetime | None = None,
        temporary: bool = False,
    ) -> ConversationInfo:
        conversation = ConversationInfo.new(
            agent_id=agent_id, title=title, owner=owner, temporary=temporary
        )
        if conversation_uuid:
            conversation.uuid = conversation_uuid
        if created_at:
            conversation.created_at = conversation.updated_at = created_at
        await self.write_path.transact(writes.insert_conversation, conversation)
        return conversation

    async def start_conversation(
        self,
        conversation: ConversationInfo,
        msgs: Sequence[Msg],
        *,
        status: ConversationStatus | None = None,
        run: RunRecord | None = None,
    ) -> list[Msg]:
        """No seq bump needed. The first turn of a new chat is the common case; doing it in
        one transaction instead of two (create, then append) saves a commit and a statement
        per run."""
        count = len(msgs)
        conversation.last_seq = conversation.message_count = count
        if status is not None:
            conversation.status = status
        await self.write_path.start_conversation(conversation, msgs, run)
        return list(msgs)

    async def fork_conversation(
        self, source: ConversationInfo, at_seq: int, *, title: str, owner: str
    ) -> ConversationInfo:
        """A copy of ``source`` up to ``at_seq`` as a new conversation (``forks``)."""
        fork = ConversationInfo.new(
            agent_id=source.agent_id, title=title, owner=owner, temporary=source.temporary
        )
        fork.parent_uuid, fork.forked_at_seq = source.uuid, at_seq
        with offloaded():  # copies many rows: off the event loop's thread on SQLite
            await self.write_path.transact(forks.copy_conversation, source.id, fork, at_seq)
        return fork

    async def update_conversation(
        self,
        conversation_pk: ConversationPk,
        *,
        title: str | None = None,
        status: ConversationStatus | None = None,
        touch: bool = True,
        pinned: bool | None = None,
        archived: bool | None = None,
    ) -> bool:
        values: dict[str, Any] = {}
        if title is not None:
            values["title"] = title[:255]
        if status is not None:
            values["status"] = status.value
        if pinned is not None:
            values["pinned"] = pinned
        if archived is not None:
            values["archived_at"] = utcnow() if archived else None
        if touch:
            values["updated_at"] = utcnow()
        if not values:
            return True
        if not await self.write_path.transact(writes.update_conversation, conversation_pk, values):
            raise ConversationNotFound(str(conversation_pk))
        return True

    async def retitle(self, conversation_uuid: str, title: str, *, replacing: str) -> bool:
        """A compare and set in one statement: False when the title was no longer
        ``replacing`` (or the conversation is gone)."""
        return await self.write_path.retitle(conversation_uuid, title[:255], replacing=replacing)

    async def delete_conversation(self, conversation_pk: ConversationPk) -> list[str]:
        with offloaded():  # may delete many rows: off the event loop's thread on SQLite
            return (await self._delete_conversations([conversation_pk])).get(conversation_pk, [])

    async def delete_conversations(
        self, conversation_pks: Sequence[ConversationPk]
    ) -> dict[ConversationPk, list[str]]:
        if not conversation_pks:
            return {}
        with offloaded():
            return await self._delete_conversations(list(conversation_pks))

    async def _delete_conversations(
        self, pks: list[ConversationPk]
    ) -> dict[ConversationPk, list[str]]:
        run_ids: dict[ConversationPk, list[str]] = {pk: [] for pk in pks}
        async with self.db.begin() as conn:
            found = await conn.execute(
                sa.select(R.c.conversation_id, R.c.run_id).where(R.c.conversation_id.in_(pks))
            )
            for conversation_pk, run_id in found:
                run_ids[conversation_pk].append(run_id)
            await conn.execute(sa.delete(R).where(R.c.conversation_id.in_(pks)))
            await conn.execute(sa.delete(S).where(S.c.conversation_id.in_(pks)))
            file_pks = await conn.run_sync(message_files.unlink_conversations, pks)
            await conn.execute(sa.delete(M).where(M.c.conversation_id.in_(pks)))
            await conn.execute(sa.delete(C).where(C.c.id.in_(pks)))
            # The files no other message links go with their last message.
            await conn.run_sync(message_files.sweep, file_pks)
        return run_ids

    async def delete_message(self, conversation_pk: ConversationPk, message_id: int) -> Deleted:
        """One message (an answer with its calls' TOOL rows) out of the conversation, in
        one transaction (``message_delete``); nothing while a run holds it (``busy``)."""
        return await self.write_path.transact(
            message_delete.delete_message, conversation_pk, message_id, utcnow()
        )

    # -- messages ------------------------------------------------------------------

    async def append_messages(
        self,
        conversation_pk: ConversationPk,
        msgs: Sequence[Msg],
        *,
        status: ConversationStatus | None = None,
        tool_calls: int = 0,
        run: RunRecord | None = None,
    ) -> list[Msg]:
        """Give ``msgs`` the next seqs and insert them, all in one transaction.

        ``run``, if given, is recorded in the same transaction, pointing at the new rows.

        The conversation row is updated first: its row lock serialises concurrent writers,
        so seqs come out strictly increasing with no gaps.
        """
        count = len(msgs)
        if count == 0:
            return []
        bump = _bump(conversation_pk, count, utcnow(), status, tools=tool_calls)
        await self.write_path.accept(conversation_pk, msgs, bump, run)
        return list(msgs)

    async def flush_answer(self, message_id: int, content: str) -> bool:
        """A growing answer's text, committed together with other runs' flushes arriving
        within the flush window (``flush_batch``); fenced like ``update_message``."""
        return await self._flushes.write(message_id, content)

    def withdraw_flush(self, message_id: int) -> None:
        """The final write takes the place of a flush still waiting for its window."""
        self._flushes.withdraw(message_id)

    async def update_message(
        self,
        message_id: int,
        *,
        content: str,
        status: MessageStatus | None = None,
        meta: dict[str, Any] | None = None,
        conversation_pk: ConversationPk | None = None,
        conversation_status: ConversationStatus | None = None,
        tool_calls: int = 0,
        run: RunRecord | None = None,
        only_streaming: bool = False,
    ) -> bool:
        """One UPDATE per flush; the final one also settles the conversation and the run.

        ``only_streaming`` fences the write: an answer someone else already closed (a
        surviving instance that found this run's lease expired) is left alone, and False
        is returned so the writer knows it has lost the run.
        """
        now = utcnow()
        values: dict[str, Any] = {"_mid": message_id, "content": content, "updated_at": now}
        if status is not None:
            values["status"] = status.value
        if meta is not None:
            values["meta"] = meta
        settle = None
        if conversation_pk is not None and (conversation_status or tool_calls):
            settle = {"_cid": conversation_pk, "_tools": tool_calls, "updated_at": now}
            if conversation_status is not None:
                settle["status"] = conversation_status.value
        return await self.write_path.settle(
            values, only_streaming=only_streaming, settle=settle, run=run
        )

    async def settle_with_rows(
        self,
        conversation_pk: ConversationPk,
        answer: Msg,
        rows: Sequence[Msg],
        *,
        conversation_status: ConversationStatus | None = None,
        run: RunRecord | None = None,
    ) -> bool:
        """Settle a streaming answer (fenced, as ``update_message``) and insert ``rows``
        after it with the next seqs; TOOL rows count as the conversation's tool calls."""
        now = utcnow()
        values: dict[str, Any] = {
            "_mid": answer.id,
            "content": answer.content,
            "status": answer.status.value,
            "meta": answer.meta,
            "updated_at": now,
        }
        tools = sum(1 for row in rows if row.role is MsgRole.TOOL)
        bump = _bump(conversation_pk, len(rows), now, conversation_status, tools=tools)
        return await self.write_path.transact(writes.settle_with_rows, values, rows, bump, run)

    async def last_messages(
        self,
        conversation_pk: ConversationPk,
        n: int,
        *,
        before_seq: int | None = None,
        after_seq: int | None = None,
    ) -> list[Msg]:
        """The last ``n`` messages a context can hold (final, not superseded), in seq
        order, optionally only those between two seqs: one indexed query, newest first."""
        query = sa.select(M).where(
            M.c.conversation_id == conversation_pk, M.c.status.not_in(_OUT_OF_CONTEXT)
        )
        if before_seq is not None:
            query = query.where(M.c.seq < before_seq)
        if after_seq is not None:
            query = query.where(M.c.seq > after_seq)
        query = query.order_by(M.c.seq.desc()).limit(n)
        rows = await self.db.rows(query)
        return [message_of(r) for r in reversed(rows)]

    async def last_question(self, conversation_pk: ConversationPk) -> Msg | None:
        """The newest USER message (what a regenerate answers again), if any."""
        query = (
            sa.select(M)
            .where(
                M.c.conversation_id == conversation_pk,
                M.c.role == MsgRole.USER.value,
                M.c.status != MessageStatus.SUPERSEDED.value,  # a question of a parked branch
            )
            .order_by(M.c.seq.desc())
            .limit(1)
        )
        row = await self.db.first(query)
        return message_of(row) if row else None

    async def answer_again(
        self,
        conversation_pk: ConversationPk,
        question: Msg,
        answer: Msg,
        *,
        status: ConversationStatus,
        run: RunRecord,
    ) -> int:
        """Supersede what follows ``question`` and open ``answer`` (``streaming``) after
        it, with ``run``: one transaction (``regenerate``); how many rows were superseded."""
        bump = _bump(conversation_pk, 1, utcnow(), status)
        return await self.write_path.transact(
            regenerate.answer_again, conversation_pk, question, answer, run, bump
        )

    async def edit_question(
        self,
        conversation_pk: ConversationPk,
        original_seq: int,
        question: Msg,
        answer: Msg,
        *,
        status: ConversationStatus,
        run: RunRecord,
    ) -> int:
        """Park the active branch from the question at ``original_seq`` on and open
        ``question`` (its next branch) with a ``streaming`` ``answer`` and ``run``: one
        transaction (``branches``); the new branch's number."""
        bump = _bump(conversation_pk, 2, utcnow(), status)
        return await self.write_path.transact(
            branches.edit_question, conversation_pk, original_seq, question, answer, run, bump
        )

    async def switch_branch(self, conversation_pk: ConversationPk, group: int, branch: int) -> int:
        """Make branch ``branch`` of the question group ``group`` the active one: one
        transaction; the first seq that changed (0: nothing did)."""
        return await self.write_path.transact(
            branches.switch_branch, conversation_pk, group, branch, utcnow()
        )

    # -- summaries -----------------------------------------------------------------

    async def add_summary(
        self, conversation_pk: ConversationPk, *, covered_to_seq: int, text: str, model: str
    ) -> Summary:
        return await summaries.add(
            self.db, conversation_pk, covered_to_seq=covered_to_seq, text=text, model=model
        )

    async def ping(self) -> None:
        await self.db.ping()


def _bump(
    pk: ConversationPk, n: int, now: datetime, status: ConversationStatus | None, tools: int = 0
) -> dict[str, Any]:
    """The conversation row's update for ``n`` new rows (``writes.bump_last_seq``)."""
    bump: dict[str, Any] = {"_cid": pk, "_n": n, "_tools": tools, "updated_at": now}
    if status is not None:
        bump["status"] = status.value
    return bump
