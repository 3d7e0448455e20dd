"""MemoryManager: the dual-track policy in one place (ARCHITECTURE.md § Dual-track memory).

SQL is the system of record; the hot window is a projection of its last N final rows.
Writes commit to SQL first and then touch the hot tier in one round trip. Reads use the
hot tier when its high-water mark has caught up with SQL, and rebuild it with one indexed
query otherwise. When the hot tier is unavailable everything is served from SQL. Every
other read of the cold store (finding a conversation by id, search, pages...) is in the
repositories beside this module (``reads.MemoryReads``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Sequence
from dataclasses import KW_ONLY, dataclass, field

from lumina_app.domain import (
    ConversationInfo,
    ConversationNotFound,
    ConversationStatus,
    MessageStatus,
    Msg,
    RunRecord,
    StoreUnavailable,
    Summary,
)
from lumina_app.domain.text import check_storable_text
from lumina_app.memory.deferred_window import DeferredWindow
from lumina_app.memory.views import MemoryView, WindowStats
from lumina_app.memory.write_hooks import WriteHooks
from lumina_app.storage.cold_store import ColdStore, Deleted
from lumina_app.storage.hot_window import HotWindow, HotWindowUnavailable
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.quotas import OwnerQuotas

log = logging.getLogger(__name__)


@dataclass(eq=False, repr=False)
class MemoryManager:
    """Conversation memory over a cold store and a hot window."""

    cold: ColdStore  # writes, and the window's reads
    hot: HotWindow
    _: KW_ONLY
    window: int
    queries: ConversationQueries  # a conversation as it is now, a view's summary
    # per owner, checked here: every door creates through this class
    quotas: OwnerQuotas | None = None
    stats: WindowStats = field(default_factory=WindowStats, init=False)
    _deferred: DeferredWindow = field(default_factory=DeferredWindow, init=False)
    # told after the writes below: deletes, final rows
    hooks: WriteHooks = field(default_factory=WriteHooks, init=False)

    # -- conversations -------------------------------------------------------------

    async def create_conversation(
        self, *, agent_id: str, title: str = "", owner: str = "", temporary: bool = False
    ) -> ConversationInfo:
        check_storable_text(title, "title")
        await self._within_quota(owner, conversations=1)
        conversation = await self.cold.create_conversation(
            agent_id=agent_id, title=title, owner=owner, temporary=temporary
        )
        await self._hot(self.hot.replace(conversation.uuid, [], 0))
        return conversation

    async def rename(
        self, conversation: ConversationInfo, title: str, *, replacing: str | None = None
    ) -> bool:
        """A new title, the conversation's place in lists kept; with ``replacing``, only
        while the stored title is still that one: whether it was renamed."""
        check_storable_text(title, "title")
        if replacing is not None:
            return await self.cold.retitle(conversation.uuid, title, replacing=replacing)
        return await self.cold.update_conversation(conversation.id, title=title, touch=False)

    async def organize(
        self, conversation: ConversationInfo, *, pinned: bool | None, archived: bool | None
    ) -> None:
        """Pin or unpin, archive or bring back; its place in lists by activity is kept."""
        await self.cold.update_conversation(
            conversation.id, pinned=pinned, archived=archived, touch=False
        )

    async def delete(self, conversation: ConversationInfo) -> None:
        """Rows first (the record), then the hot key and whatever else registered."""
        run_ids = await self.cold.delete_conversation(conversation.id)
        self._deferred.drop_conversation(conversation.uuid)
        await self._hot(self.hot.delete(conversation.uuid))
        await self.hooks.deleted(conversation, run_ids)

    async def delete_many(self, conversations: Sequence[ConversationInfo]) -> list[str]:
        """``delete`` for a batch: every row of them in one SQL transaction, then each one's
        hot key and hooks; returns the run ids deleted."""
        run_ids = await self.cold.delete_conversations([c.id for c in conversations])
        for conversation in conversations:
            self._deferred.drop_conversation(conversation.uuid)
            await self._hot(self.hot.delete(conversation.uuid))
            await self.hooks.deleted(conversation, run_ids.get(conversation.id, []))
        return [run_id for ids in run_ids.values() for run_id in ids]

    async def fork(
        self, source: ConversationInfo, at_seq: int, *, title: str, owner: str
    ) -> ConversationInfo:
        """A new conversation holding ``source`` up to ``at_seq`` (messages, and the
        summaries covering no more); its window is built on its first read."""
        check_storable_text(title, "title")
        await self._within_quota(owner, conversations=1)
        fork = await self.cold.fork_conversation(source, at_seq, title=title, owner=owner)
        await self.hooks.finalised(fork, [])
        return fork

    # -- writes --------------------------------------------------------------------

    async def begin_turn(
        self, conversation: ConversationInfo, user: Msg, assistant: Msg, run: RunRecord
    ) -> tuple[Msg, Msg]:
        """Commit the question, a ``streaming`` answer row and the run record together;
        the question joins the window with the answer, once that is final, in one round
        trip (``deferred_window``)."""
        await self._within_quota(conversation.owner, messages=2)
        assistant.status = MessageStatus.STREAMING
        saved_user, saved_assistant = await self.cold.append_messages(
            conversation.id, [user, assistant], status=ConversationStatus.RUNNING, run=run
        )
        self._deferred.hold(saved_assistant.id, conversation.uuid, [saved_user], fresh=False)
        return saved_user, saved_assistant

    async def begin_conversation(
        self, conversation: ConversationInfo, user: Msg, assistant: Msg, run: RunRecord
    ) -> tuple[Msg, Msg]:
        """``begin_turn`` for a conversation not stored yet (``ConversationInfo.new``): it
        is inserted in the same transaction, and its window starts with the question and
        the final answer."""
        check_storable_text(conversation.title, "title")
        await self._within_quota(conversation.owner, conversations=1, messages=2)
        assistant.status = MessageStatus.STREAMING
        saved_user, saved_assistant = await self.cold.start_conversation(
            conversation, [user, assistant], status=ConversationStatus.RUNNING, run=run
        )
        self._deferred.hold(saved_assistant.id, conversation.uuid, [saved_user], fresh=True)
        return saved_user, saved_assistant

    async def begin_regenerate(
        self, conversation: ConversationInfo, question: Msg, assistant: Msg, run: RunRecord
    ) -> Msg:
        """Answer ``question`` (the newest) again: what followed it becomes ``superseded``
        and a ``streaming`` answer row opens after it, with the run, in one transaction.
        The window is reinstalled without the superseded rows, its mark on the row just
        before the new answer (which then extends it like any answer)."""
        await self._within_quota(conversation.owner, messages=1)
        assistant.status = MessageStatus.STREAMING
        await self.cold.answer_again(
            conversation.id, question, assistant, status=ConversationStatus.RUNNING, run=run
        )
        await self._reinstall(conversation, assistant.seq - 1)
        return assistant

    async def begin_edit(
        self,
        conversation: ConversationInfo,
        original_seq: int,
        question: Msg,
        assistant: Msg,
        run: RunRecord,
    ) -> tuple[Msg, Msg]:
        """Ask the question at ``original_seq`` again as ``question``: the active branch
        from there on is parked (``storage.sql.branches``), the new question and a
        ``streaming`` answer row open after everything, with the run, in one transaction.
        The window is reinstalled from SQL (the new question in it, the parked rows not),
        its mark on the question."""
        await self._within_quota(conversation.owner, messages=2)
        assistant.status = MessageStatus.STREAMING
        await self.cold.edit_question(
            conversation.id,
            original_seq,
            question,
            assistant,
            status=ConversationStatus.RUNNING,
            run=run,
        )
        await self._reinstall(conversation, assistant.seq - 1)
        return question, assistant

    async def switch_branch(self, conversation: ConversationInfo, group: int, branch: int) -> int:
        """Make branch ``branch`` of the question group ``group`` the active one; the
        window is reinstalled from SQL, its mark on the conversation's last seq (the rows
        after the active branch's last one are parked). The first seq that changed."""
        changed = await self.cold.switch_branch(conversation.id, group, branch)
        if changed:
            await self._reinstall(conversation, conversation.last_seq)
        return changed

    async def begin_continue(
        self, conversation: ConversationInfo, results: Sequence[Msg], assistant: Msg, run: RunRecord
    ) -> tuple[list[Msg], Msg]:
        """A turn goes on after a client's tool outputs: ``results`` (TOOL rows, final)
        and a ``streaming`` answer row after them, with the run, in one transaction; the
        results join the window."""
        for msg in results:
            check_storable_text(msg.content, "tool output")
        await self._within_quota(conversation.owner, messages=len(results) + 1)
        assistant.status = MessageStatus.STREAMING
        saved = await self.cold.append_messages(
            conversation.id, [*results, assistant], status=ConversationStatus.RUNNING, run=run
        )
        outputs, answer = list(saved[:-1]), saved[-1]
        await self._window_final(conversation, outputs)
        return outputs, answer

    async def flush_answer(self, message_id: int, content: str) -> bool:
        """Persist a growing answer, fenced like the final write; committed together with
        other runs' flushes of the same moment (``storage.flush_batch``)."""
        return await self.cold.flush_answer(message_id, content)

    def withdraw_flush(self, message_id: int) -> None:
        """The answer's final write (or its step's) is next and stores the whole text: a
        flush of it still waiting for the group commit is not needed, nor waited for."""
        self.cold.withdraw_flush(message_id)

    async def finish_answer(
        self,
        conversation: ConversationInfo,
        assistant: Msg,
        *,
        conversation_status: ConversationStatus,
        results: Sequence[Msg] = (),
        run: RunRecord | None = None,
    ) -> bool:
        """Settle the answer's final text and status (and the run) in SQL, then window it.
        ``results``: TOOL rows of calls the run ends without going on with (a stop, the
        step limit), stored after it in the same transaction, so a call never stays
        without its results. False (nothing written) if the answer had been closed by
        someone else (fenced off)."""
        if results:
            written = await self.cold.settle_with_rows(
                conversation.id,
                assistant,
                results,
                conversation_status=conversation_status,
                run=run,
            )
        else:
            written = await self.cold.update_message(
                assistant.id,
                content=assistant.content,
                status=assistant.status,
                meta=assistant.meta,
                conversation_pk=conversation.id,
                conversation_status=conversation_status,
                run=run,
                only_streaming=True,
            )
        await self._window_settled(conversation, [assistant, *results], written)
        return written

    async def finish_step(
        self,
        conversation: ConversationInfo,
        assistant: Msg,
        results: Sequence[Msg],
        next_answer: Msg,
        *,
        run: RunRecord,
    ) -> bool:
        """A tool step ends, in one transaction: the answer that asked for tools settles,
        its TOOL rows follow it, and the next answer row opens ``streaming`` (the run's
        record points at it). The settled rows join the window. False as above."""
        next_answer.status = MessageStatus.STREAMING
        written = await self.cold.settle_with_rows(
            conversation.id, assistant, [*results, next_answer], run=run
        )
        await self._window_settled(conversation, [assistant, *results], written)
        return written

    async def append_history(
        self, conversation: ConversationInfo, msgs: Sequence[Msg]
    ) -> list[Msg]:
        """Store messages a client brings along (earlier turns it had elsewhere): final rows,
        the next seqs, one transaction; then windowed like any final rows. Returns them
        as stored (ids, seqs)."""
        for msg in msgs:
            check_storable_text(msg.content, "message")
        await self._within_quota(conversation.owner, messages=len(msgs))
        saved = await self.cold.append_messages(conversation.id, msgs)
        await self._window_final(conversation, saved)
        return list(saved or [])

    async def delete_message(self, conversation: ConversationInfo, message_id: int) -> Deleted:
        """One message out (an answer with its calls' results): SQL first (``last_seq``
        moves past it, so every instance sees the change; vectors and the summaries
        reaching the row go too), then the window reinstalled, then the hooks (warm
        sessions, the archive mirror). ``busy`` (nothing removed) while a run holds it."""
        deleted = await self.cold.delete_message(conversation.id, message_id)
        if not deleted.message_ids:
            return deleted
        await self._reinstall(conversation, deleted.last_seq)
        await self.hooks.removed(conversation, deleted.turn_ids)
        return deleted

    # -- reads ---------------------------------------------------------------------

    async def load(self, conversation: ConversationInfo) -> list[Msg]:
        """The last N final messages, from the hot window when it is current."""
        return (await self.load_view(conversation)).messages

    async def load_view(self, conversation: ConversationInfo) -> MemoryView:
        """The last N final messages and the rolling summary, from the hot window when
        it is current (one round trip), else rebuilt from SQL. ``conversation`` must be
        freshly read: its ``last_seq`` is what the window's high-water mark is checked
        against."""
        try:
            window = await self.hot.read(conversation.uuid)
        except HotWindowUnavailable:
            self.stats.count("fallback")
            return await self._from_sql(conversation)
        if window is not None and self._is_current(
            window.messages, window.high_water, conversation
        ):
            self.stats.count("hit")
            return MemoryView(window.messages[-self.window :], window.summary)
        self.stats.count("rebuild")
        return await self._reinstall(conversation)

    def _is_current(self, msgs: Sequence[Msg], high_water: int, conv: ConversationInfo) -> bool:
        if high_water < conv.last_seq:
            return False
        # A window shorter than it should be (e.g. N was raised) is rebuilt, not trusted;
        # one that starts at seq 1 holds everything (``message_count`` also counts the
        # superseded rows no window holds, so it alone would rebuild such a window forever).
        return (
            len(msgs) >= min(self.window, conv.message_count)
            or high_water > conv.last_seq
            or (bool(msgs) and msgs[0].seq == 1)
        )

    async def rebuild(self, conversation: ConversationInfo) -> list[Msg]:
        """Reinstall the window (and its summary) from SQL and return the messages."""
        return (await self._reinstall(conversation)).messages

    async def _reinstall(
        self, conversation: ConversationInfo, high_water: int | None = None
    ) -> MemoryView:
        """Reinstall the window and its summary from SQL, the mark on ``high_water``
        (default: the last row's seq); the view it holds."""
        view = await self._from_sql(conversation)
        if high_water is None:
            high_water = view.messages[-1].seq if view.messages else 0
        await self._hot(
            self.hot.replace(conversation.uuid, view.messages, high_water, view.summary)
        )
        return view

    async def _from_sql(self, conversation: ConversationInfo) -> MemoryView:
        """One indexed query for the last N, one for the newest summary."""
        msgs = await self.cold.last_messages(conversation.id, self.window)
        return MemoryView(msgs, await self.queries.latest_summary(conversation.id))

    # -- summaries -----------------------------------------------------------------

    async def write_summary(
        self, conversation: ConversationInfo, *, covered_to_seq: int, text: str, model: str
    ) -> Summary:
        """SQL first, then the copy beside the hot window."""
        check_storable_text(text, "summary")
        summary = await self.cold.add_summary(
            conversation.id, covered_to_seq=covered_to_seq, text=text, model=model
        )
        await self._hot(self.hot.set_summary(conversation.uuid, summary))
        return summary

    # -- the hot tier ----------------------------------------------------------------

    @property
    def hot_backend(self) -> str:
        """``redis`` or ``memory`` (in-process)."""
        return self.hot.name

    async def hot_status(self) -> str:
        return await self.hot.status()

    async def ping(self) -> None:
        """Raises if the system of record cannot be reached."""
        await self.cold.ping()

    async def close(self) -> None:
        """Closes the hot tier (the database belongs to whoever opened it)."""
        await self.hot.close()

    async def _window_settled(
        self, conversation: ConversationInfo, settled: Sequence[Msg], written: bool
    ) -> None:
        """After a run's answer was settled (or fenced off: ``written`` False), push it
        with the question its accept held back, and tell the observers."""
        held, fresh = self._deferred.take(settled[0].id)
        if not written:
            return
        if fresh:
            msgs = [*held, *settled]
            await self._hot(self.hot.replace(conversation.uuid, msgs, msgs[-1].seq))
        else:
            await self._window(conversation, [*held, *settled])
        await self.hooks.finalised(conversation, settled)

    async def _window_final(self, conversation: ConversationInfo, msgs: Sequence[Msg]) -> None:
        """Final rows just written (if any): into the window, then to the hooks."""
        if msgs:
            await self._window(conversation, msgs)
            await self.hooks.finalised(conversation, msgs)

    async def _window(self, conversation: ConversationInfo, msgs: Sequence[Msg]) -> None:
        """Push final messages to the hot window. One that is missing (expired, flushed,
        never read by a warm session) or broken by a gap is rebuilt from SQL at once."""
        try:
            if not await self.hot.append(conversation.uuid, msgs):
                current = await self.queries.get_conversation(conversation.uuid)
                self.stats.count("rebuild")
                await self.rebuild(current)
        except ConversationNotFound:
            pass  # deleted meanwhile (e.g. during its own run): nothing to window
        except HotWindowUnavailable:
            self.stats.count("fallback")
        except StoreUnavailable as exc:  # the write itself is committed; the window can wait
            log.warning("hot window not rebuilt after a write: %s", exc)

    async def _within_quota(self, owner: str, *, conversations: int = 0, messages: int = 0) -> None:
        """The owner's quotas (QuotaExceeded, nothing stored), before any creating write."""
        if self.quotas is not None:
            await self.quotas.check(owner, conversations=conversations, messages=messages)

    async def _hot(self, operation: Awaitable[None]) -> None:
        """Hot-tier writes are best effort: SQL already holds the truth."""
        try:
            await operation
        except HotWindowUnavailable:
            self.stats.count("fallback")
