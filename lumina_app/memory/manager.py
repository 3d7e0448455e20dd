"""MemoryManager: the dual-track policy in one place (DESIGN §4).

SQL is the system of record; the hot window is a projection of its last N final rows.
Writes commit to SQL first and then touch the hot tier in one round trip. Reads use the
hot tier when its high-water mark has caught up with SQL, and rebuild it with one indexed
query otherwise. When the hot tier is unavailable everything is served from SQL.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lumina_app.domain import (
    ConversationInfo,
    ConversationNotFound,
    ConversationStatus,
    ImportOutcome,
    MessageStatus,
    Msg,
    MsgRole,
    Principal,
    RunRecord,
    StoreUnavailable,
    Summary,
)
from lumina_app.domain.access import is_conversation_id
from lumina_app.domain.search import MessageHit
from lumina_app.domain.text import check_storable_text
from lumina_app.domain.versions import AnswerRow, number_versions
from lumina_app.storage.hot_window import HotWindow, HotWindowUnavailable
from lumina_app.storage.sql import archive_rows, history_match, regenerate, search, summaries
from lumina_app.storage.sql.cold_store import ColdStore

log = logging.getLogger(__name__)

DeleteHook = Callable[[ConversationInfo], Awaitable[None]]
FinalHook = Callable[[ConversationInfo, Sequence[Msg]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class MemoryView:
    """What a context is built from: the last N final messages and the rolling summary
    of what left them (None when there is none yet)."""

    messages: list[Msg]
    summary: Summary | None = None


@dataclass(slots=True)
class WindowStats:
    """Hot-window reads by result; ``listeners`` (metrics) hear each one as it happens."""

    hits: int = 0
    rebuilds: int = 0
    fallbacks: int = 0
    listeners: list[Callable[[str], None]] = field(default_factory=list)

    def count(self, result: str) -> None:
        """``hit``, ``rebuild`` or ``fallback``."""
        if result == "hit":
            self.hits += 1
        elif result == "rebuild":
            self.rebuilds += 1
        else:
            self.fallbacks += 1
        for listener in self.listeners:
            listener(result)

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.rebuilds + self.fallbacks
        return self.hits / total if total else 0.0


class MemoryManager:
    """Conversation memory over a cold store and a hot window."""

    def __init__(self, cold: ColdStore, hot: HotWindow, *, window: int) -> None:
        self.cold = cold
        self.hot = hot
        self.window = window
        self.stats = WindowStats()
        self._delete_hooks: list[DeleteHook] = []
        self._final_hooks: list[FinalHook] = []
        self._runs_deleted_hooks: list[Callable[[list[str]], Awaitable[None]]] = []

    def on_delete(self, hook: DeleteHook) -> None:
        """Other tiers (archive, run buffers) register what a delete must also clear."""
        self._delete_hooks.append(hook)

    def on_final(self, hook: FinalHook) -> None:
        """Observers (the archive mirror) of messages committed final; called after SQL and
        the hot window, so they must be quick. A failing observer is logged, never raised."""
        self._final_hooks.append(hook)

    # -- conversations -------------------------------------------------------------

    async def create_conversation(
        self, *, agent_id: str, title: str = "", owner: str = ""
    ) -> ConversationInfo:
        check_storable_text(title, "title")
        conversation = await self.cold.create_conversation(
            agent_id=agent_id, title=title, owner=owner
        )
        await self._hot(self.hot.replace(conversation.uuid, [], 0))
        return conversation

    async def get_conversation(
        self, conversation_uuid: str, *, owner: str | None = None, agent_id: str | None = None
    ) -> ConversationInfo:
        """A conversation by id; ``owner``/``agent_id`` narrow it (else not found). Callers
        acting for someone use :meth:`find_visible`; this unscoped form is for the run
        machinery and operator tools."""
        return await self.cold.get_conversation(conversation_uuid, owner=owner, agent_id=agent_id)

    async def find_visible(
        self, principal: Principal, conversation_id: str, *, agent_id: str | None = None
    ) -> ConversationInfo:
        """The one visibility rule: the principal's own conversation (of that agent, if
        given). Someone else's, another agent's, a malformed id: ConversationNotFound."""
        if not is_conversation_id(conversation_id):
            raise ConversationNotFound(str(conversation_id))
        return await self.cold.get_conversation(
            conversation_id, owner=principal.owner, agent_id=agent_id
        )

    async def list_conversations(self, **kwargs: Any) -> tuple[list[ConversationInfo], str | None]:
        return await self.cold.list_conversations(**kwargs)

    async def rename(self, conversation: ConversationInfo, title: str) -> None:
        """A new title; the conversation keeps its place in lists (ordered by activity)."""
        check_storable_text(title, "title")
        await self.cold.update_conversation(conversation.id, title=title, touch=False)

    async def delete(self, conversation: ConversationInfo) -> None:
        """Rows first (the record), then the hot key and whatever else registered."""
        run_ids = await self.cold.delete_conversation(conversation.id)
        await self._hot(self.hot.delete(conversation.uuid))
        for hook in self._delete_hooks:
            await hook(conversation)
        for runs_hook in self._runs_deleted_hooks:
            await runs_hook(run_ids)

    async def fork(
        self, source: ConversationInfo, at_seq: int, *, title: str, owner: str
    ) -> ConversationInfo:
        """A new conversation holding ``source`` up to ``at_seq`` (messages, and the
        summaries covering no more): its own window from the first read on, its own
        archive folder."""
        check_storable_text(title, "title")
        fork = await self.cold.fork_conversation(source, at_seq, title=title, owner=owner)
        await self._finalised(fork, [])
        return fork

    def on_runs_deleted(self, hook: Callable[[list[str]], Awaitable[None]]) -> None:
        """Whoever keeps per-run data (event buffers) drops it when its runs are deleted."""
        self._runs_deleted_hooks.append(hook)

    # -- writes --------------------------------------------------------------------

    async def begin_turn(
        self, conversation: ConversationInfo, user: Msg, assistant: Msg, run: RunRecord
    ) -> tuple[Msg, Msg]:
        """Commit the question, a ``streaming`` answer row and the run record together;
        then window the question (the answer follows once it is final)."""
        assistant.status = MessageStatus.STREAMING
        saved_user, saved_assistant = await self.cold.append_messages(
            conversation.id, [user, assistant], status=ConversationStatus.RUNNING, run=run
        )
        await self._window(conversation, [saved_user])
        return saved_user, saved_assistant

    async def begin_conversation(
        self, conversation: ConversationInfo, user: Msg, assistant: Msg, run: RunRecord
    ) -> tuple[Msg, Msg]:
        """``begin_turn`` for a conversation not stored yet (``ConversationInfo.new``): it
        is inserted in the same transaction, and its window starts with the question."""
        check_storable_text(conversation.title, "title")
        assistant.status = MessageStatus.STREAMING
        saved_user, saved_assistant = await self.cold.start_conversation(
            conversation, [user, assistant], status=ConversationStatus.RUNNING, run=run
        )
        await self._hot(self.hot.replace(conversation.uuid, [saved_user], saved_user.seq))
        return saved_user, saved_assistant

    async def begin_regenerate(
        self, conversation: ConversationInfo, question: Msg, assistant: Msg, run: RunRecord
    ) -> Msg:
        """Answer ``question`` (the newest) again: what followed it becomes ``superseded``
        and a ``streaming`` answer row opens after it, with the run, in one transaction.
        The window is reinstalled without the superseded rows, its mark on the row just
        before the new answer (which then extends it like any answer)."""
        assistant.status = MessageStatus.STREAMING
        await self.cold.answer_again(
            conversation.id, question, assistant, status=ConversationStatus.RUNNING, run=run
        )
        view = await self._from_sql(conversation)
        await self._hot(
            self.hot.replace(conversation.uuid, view.messages, assistant.seq - 1, view.summary)
        )
        return assistant

    async def begin_continue(
        self, conversation: ConversationInfo, results: Sequence[Msg], assistant: Msg, run: RunRecord
    ) -> tuple[list[Msg], Msg]:
        """A turn goes on after a client's tool outputs: ``results`` (TOOL rows, final)
        and a ``streaming`` answer row after them, with the run, in one transaction; the
        results join the window."""
        for msg in results:
            check_storable_text(msg.content, "tool output")
        assistant.status = MessageStatus.STREAMING
        saved = await self.cold.append_messages(
            conversation.id, [*results, assistant], status=ConversationStatus.RUNNING, run=run
        )
        outputs, answer = list(saved[:-1]), saved[-1]
        if outputs:
            await self._window(conversation, outputs)
            await self._finalised(conversation, outputs)
        return outputs, answer

    async def flush_answer(self, message_id: int, content: str) -> bool:
        """Persist a growing answer, fenced like the final write; committed together with
        other runs' flushes of the same moment (``storage.flush_batch``)."""
        return await self.cold.flush_answer(message_id, content)

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

        ``results`` are the TOOL rows of calls the answer asked for that the run ends
        without going further on (a stop during the calls, the step limit): stored after
        it in the same transaction, so a call never stays without its results.
        False if the answer had already been closed by someone else (fenced off): then
        nothing is written.
        """
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
                conversation_id=conversation.id,
                conversation_status=conversation_status,
                run=run,
                only_streaming=True,
            )
        if written:
            await self._window(conversation, [assistant, *results])
            await self._finalised(conversation, [assistant, *results])
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
        record points at it). The settled rows — consecutive seqs — join the window.

        False (nothing written) if the answer had been closed by someone else.
        """
        next_answer.status = MessageStatus.STREAMING
        written = await self.cold.settle_with_rows(
            conversation.id, assistant, [*results, next_answer], run=run
        )
        if written:
            await self._window(conversation, [assistant, *results])
            await self._finalised(conversation, [assistant, *results])
        return written

    # -- reads ---------------------------------------------------------------------

    async def load(self, conversation: ConversationInfo) -> list[Msg]:
        """The last N final messages, from the hot window when it is current."""
        return (await self.load_view(conversation)).messages

    async def load_view(self, conversation: ConversationInfo) -> MemoryView:
        """The last N final messages and the rolling summary, from the hot window when
        it is current (one round trip), else rebuilt from SQL.

        ``conversation`` must be freshly read: its ``last_seq`` is what the window's
        high-water mark is checked against.
        """
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
        return await self._rebuild(conversation)

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
        return (await self._rebuild(conversation)).messages

    async def _rebuild(self, conversation: ConversationInfo) -> MemoryView:
        view = await self._from_sql(conversation)
        high_water = view.messages[-1].seq if view.messages else 0
        await self._hot(
            self.hot.replace(conversation.uuid, view.messages, high_water, view.summary)
        )
        return view

    async def last_question(self, conversation: ConversationInfo) -> Msg | None:
        """The newest user message: what a regenerate answers again."""
        return await self.cold.last_question(conversation.id)

    async def view_before(self, conversation: ConversationInfo, seq: int) -> MemoryView:
        """What a context for the message at ``seq`` is built from, read from SQL: the last
        N messages before it a context can hold, and the newest summary covering less."""
        msgs = await self.cold.last_messages(conversation.id, self.window, before_seq=seq)
        summary = await summaries.latest(self.cold.db, conversation.id, before_seq=seq)
        return MemoryView(msgs, summary)

    async def with_unsummarized(
        self,
        conversation: ConversationInfo,
        view: MemoryView,
        *,
        limit: int,
        before_seq: int | None = None,
    ) -> MemoryView:
        """``view`` with, before its messages, those its summary does not cover yet (the
        newest ``limit``): what left the window since the last summary, until the next one
        lands. One indexed range query, none when there is no such gap. ``before_seq``:
        where the view ends (a regenerate's question), if not at the conversation's end."""
        covered = view.summary.covered_to_seq if view.summary else 0
        end = conversation.last_seq + 1 if before_seq is None else before_seq
        first = view.messages[0].seq if view.messages else end
        if first - covered <= 1:
            return view
        older = await self.cold.last_messages(
            conversation.id, limit, before_seq=first, after_seq=covered
        )
        return MemoryView([*older, *view.messages], view.summary) if older else view

    async def _from_sql(self, conversation: ConversationInfo) -> MemoryView:
        """One indexed query for the last N, one for the newest summary."""
        msgs = await self.cold.last_messages(conversation.id, self.window)
        return MemoryView(msgs, await summaries.latest(self.cold.db, conversation.id))

    # -- summaries -----------------------------------------------------------------

    async def summary_of(self, summary_id: int) -> Summary | None:
        return await summaries.get(self.cold.db, summary_id)

    async def unsummarized(
        self, conversation: ConversationInfo, *, after_seq: int, before_seq: int
    ) -> list[Msg]:
        """Final messages with ``after_seq < seq < before_seq``: what left the window
        since the last summary. Superseded answers are never summarized."""
        if before_seq - after_seq <= 1:
            return []
        msgs = await self.cold.page_messages(
            conversation.id, limit=before_seq - after_seq - 1, after_seq=after_seq
        )
        return [
            m
            for m in msgs
            if m.seq < before_seq and m.status.is_final and m.status is not MessageStatus.SUPERSEDED
        ]

    async def write_summary(
        self, conversation: ConversationInfo, *, covered_to_seq: int, text: str, model: str
    ) -> Summary:
        """SQL first, then the copy beside the hot window."""
        check_storable_text(text, "summary")
        summary = await summaries.add(
            self.cold.db, conversation.id, covered_to_seq=covered_to_seq, text=text, model=model
        )
        await self._hot(self.hot.set_summary(conversation.uuid, summary))
        return summary

    async def summaries_of(self, conversation: ConversationInfo) -> list[Summary]:
        return await summaries.all_of(self.cold.db, conversation.id)

    async def history(
        self,
        conversation: ConversationInfo,
        *,
        limit: int = 50,
        after_seq: int | None = None,
        before_seq: int | None = None,
    ) -> list[Msg]:
        """Replay: every message ever stored, paged by seq (always from SQL)."""
        return await self.cold.page_messages(
            conversation.id, limit=limit, after_seq=after_seq, before_seq=before_seq
        )

    async def versions(
        self, conversation: ConversationInfo, msgs: Sequence[Msg]
    ) -> dict[int, tuple[int, int]]:
        """``seq -> (version, versions)`` for the answer rows among ``msgs`` (a page in seq
        order). Only a page with superseded rows, or one starting inside a turn, needs
        one more query (for the turns' rows off the page); otherwise each answer is the
        only version of its turn."""
        answers = [m for m in msgs if m.role is not MsgRole.USER]
        off_page = msgs and msgs[0].role is not MsgRole.USER and msgs[0].seq > 1
        if off_page or any(m.status is MessageStatus.SUPERSEDED for m in answers):
            turns = sorted({m.turn_id for m in answers})
            rows = await regenerate.answer_rows(self.cold.db, conversation.id, turns)
        else:
            rows = [
                AnswerRow(m.seq, m.turn_id, m.role is MsgRole.ASSISTANT, m.meta.get("runId"))
                for m in answers
            ]
        return number_versions(rows)

    async def turn_rows(self, conversation_id: int, after_seq: int, before_seq: int) -> list[Msg]:
        """Every stored row strictly between two seqs, in order (a run's tool steps)."""
        rows = await self.cold.page_messages(
            conversation_id, after_seq=after_seq, limit=max(0, before_seq - after_seq - 1)
        )
        return [m for m in rows if m.seq < before_seq]

    async def search(
        self,
        words: Sequence[str],
        *,
        owner: str,
        conversation: ConversationInfo | None = None,
        agent_id: str | None = None,
        limit: int = 20,
    ) -> list[MessageHit]:
        """An owner's final messages matching every word, through the full-text index."""
        return await search.search_messages(
            self.cold.db,
            words,
            owner=owner,
            conversation_id=conversation.id if conversation else None,
            agent_id=agent_id,
            limit=limit,
        )

    async def final_messages(self, conversation: ConversationInfo) -> list[Msg]:
        """Every final message in seq order (exports): one query, from SQL."""
        return await archive_rows.final_messages(self.cold.db, conversation.id)

    async def messages_by_id(self, conversation_id: int, ids: Sequence[int]) -> list[Msg]:
        """Stored messages of one conversation by id, in seq order."""
        return await self.cold.messages_by_id(conversation_id, ids)

    async def get_message(self, message_id: int) -> Msg | None:
        return await self.cold.get_message(message_id)

    async def conversation_uuid(self, conversation_id: int) -> str | None:
        return await self.cold.conversation_uuid(conversation_id)

    # -- the OpenAI-compatible gateway ---------------------------------------------

    async def opened_with(
        self, *, owner: str, agent_id: str, opening: str, limit: int
    ) -> dict[str, list[Msg]]:
        """Conversations of ``owner`` and ``agent_id`` that opened with a question of that
        hash (most recent first, at most ``limit``): the rows a client saw of each, by uuid."""
        ids = dict(
            await history_match.candidates(
                self.cold.db, owner=owner, agent_id=agent_id, opening=opening, limit=limit
            )
        )
        rows = await history_match.seen_rows(self.cold.db, list(ids))
        return {uuid: rows.get(cid, []) for cid, uuid in ids.items()}

    async def by_session_key(
        self, *, owner: str, agent_id: str, key_hash: str
    ) -> tuple[str, list[Msg]] | None:
        """The conversation a client's session key was recorded on, with the rows it could
        have seen of it; None if the key is new."""
        found = await history_match.by_session_key(
            self.cold.db, owner=owner, agent_id=agent_id, key_hash=key_hash
        )
        if found is None:
            return None
        conversation_id, uuid = found
        rows = await history_match.seen_rows(self.cold.db, [conversation_id])
        return uuid, rows.get(conversation_id, [])

    async def append_history(
        self, conversation: ConversationInfo, msgs: Sequence[Msg]
    ) -> list[Msg]:
        """Store messages a client brings along (earlier turns it had elsewhere): final rows,
        the next seqs, one transaction; then windowed like any final rows. Returns them
        as stored (ids, seqs)."""
        for msg in msgs:
            check_storable_text(msg.content, "message")
        saved = await self.cold.append_messages(conversation.id, msgs)
        if saved:
            await self._window(conversation, saved)
            await self._finalised(conversation, saved)
        return list(saved or [])

    async def gateway_meta(self, conversation: ConversationInfo) -> dict[str, Any]:
        return await history_match.gateway_meta(self.cold.db, conversation.id)

    async def set_gateway_meta(
        self, conversation: ConversationInfo, *, opening: str | None, meta: dict[str, Any]
    ) -> None:
        await history_match.set_gateway_meta(
            self.cold.db, conversation.id, opening=opening, meta=meta
        )

    # -- archive import ------------------------------------------------------------

    async def import_conversation(
        self,
        conversation: ConversationInfo,
        msgs: Sequence[Msg],
        summaries: Sequence[Summary] = (),
    ) -> tuple[ImportOutcome, int]:
        """Store an archived conversation (one transaction). A hot window it had falls
        behind ``last_seq`` and is rebuilt by the next read."""
        return await archive_rows.import_conversation(self.cold.db, conversation, msgs, summaries)

    # -- the hot tier ----------------------------------------------------------------

    @property
    def hot_backend(self) -> str:
        """``redis`` or ``memory`` (in-process)."""
        return self.hot.name

    async def hot_status(self) -> str:
        return await self.hot.status()

    async def ping(self) -> None:
        """Raises if the system of record cannot be reached."""
        await self.cold.db.ping()

    async def close(self) -> None:
        """Closes the hot tier (the database belongs to whoever opened it)."""
        await self.hot.close()

    async def _finalised(self, conversation: ConversationInfo, msgs: Sequence[Msg]) -> None:
        for hook in self._final_hooks:
            try:
                await hook(conversation, msgs)
            except Exception:
                log.warning("on_final hook %r failed", hook, exc_info=True)

    async def _window(self, conversation: ConversationInfo, msgs: Sequence[Msg]) -> None:
        """Push final messages to the hot window. One that is missing (expired, flushed,
        never read by a warm session) or broken by a gap is rebuilt from SQL at once."""
        try:
            if not await self.hot.append(conversation.uuid, msgs):
                current = await self.cold.get_conversation(conversation.uuid)
                self.stats.count("rebuild")
                await self.rebuild(current)
        except ConversationNotFound:
            pass  # deleted meanwhile (e.g. during its own run): nothing to window
        except HotWindowUnavailable:
            self.stats.count("fallback")
        except StoreUnavailable as exc:  # the write itself is committed; the window can wait
            log.warning("hot window not rebuilt after a write: %s", exc)

    async def _hot(self, operation: Awaitable[None]) -> None:
        """Hot-tier writes are best effort: SQL already holds the truth."""
        try:
            await operation
        except HotWindowUnavailable:
            self.stats.count("fallback")
