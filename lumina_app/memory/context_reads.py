"""What a run's context is built from besides the window (``agents/run/turns.py``): the
question a regenerate or a continuation answers, what came before it, the summary gap, and
the rest of a turn. Read from SQL only: none of it is the window policy, which stays in
``MemoryManager``."""

from __future__ import annotations

from lumina_app.domain import ConversationInfo, MessageStatus, Msg
from lumina_app.memory.views import MemoryView
from lumina_app.storage.cold_store import ColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries


class ContextReads:
    def __init__(self, cold: ColdStore, queries: ConversationQueries, *, window: int) -> None:
        self.cold = cold  # the window
        self.queries = queries
        self.window = window  # N, as the hot window holds it

    async def last_question(self, conversation: ConversationInfo) -> Msg | None:
        """The newest user message: what a regenerate answers again."""
        return await self.cold.last_question(conversation.id)

    async def message_at(self, conversation: ConversationInfo, seq: int) -> Msg | None:
        """The message at ``seq`` on the active branch (None: no such row, or it is not
        shown: parked on another branch, or an answer a regenerate replaced)."""
        rows = await self.queries.page_messages(conversation.id, limit=1, after_seq=seq - 1)
        if not rows or rows[0].seq != seq or rows[0].status is MessageStatus.SUPERSEDED:
            return None
        return rows[0]

    async def rows_after(
        self, conversation: ConversationInfo, seq: int, *, limit: int = 200
    ) -> list[Msg]:
        """The rows after the message at ``seq``: the rest of a turn a client's tool
        outputs go on with."""
        return await self.queries.page_messages(conversation.id, limit=limit, after_seq=seq)

    async def view_before(self, conversation: ConversationInfo, seq: int) -> MemoryView:
        """What a context for the message at ``seq`` is built from: the last N messages
        before it a context can hold, and the newest summary covering less."""
        msgs = await self.cold.last_messages(conversation.id, self.window, before_seq=seq)
        return MemoryView(msgs, await self.queries.latest_summary(conversation.id, before_seq=seq))

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
