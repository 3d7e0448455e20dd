"""What reading conversations takes (``services/conversations.py``,
``services/openai_conversations.py``): lists, pages of every stored row, the versions of
a page's answers, rows by id. Always from SQL: the hot window is for contexts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from lumina_app.domain import ConversationInfo, MessageStatus, Msg, MsgRole
from lumina_app.domain.versions import AnswerRow, number_versions
from lumina_app.storage.sql import regenerate
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase


class ConversationReads:
    def __init__(self, queries: ConversationQueries, db: SQLDatabase) -> None:
        self.queries = queries
        self.db = db

    async def batch(
        self,
        *,
        owner: str | None = None,
        agent_id: str | None = None,
        updated_before: datetime | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> list[ConversationInfo]:
        """The first ``limit`` conversations by row id past ``after_id`` matching: a
        purge's next batch, an export's next page."""
        return await self.queries.select_conversations(
            owner=owner,
            agent_id=agent_id,
            updated_before=updated_before,
            after_id=after_id,
            limit=limit,
        )

    async def agent_ids(self) -> list[str]:
        """Every agent id with conversations (deleted agents' too)."""
        return await self.queries.agent_ids()

    async def list_conversations(
        self,
        *,
        agent_id: str | None = None,
        owner: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
        search: str | None = None,
        pinned: bool | None = None,
        archived: bool | None = None,
    ) -> tuple[list[ConversationInfo], str | None]:
        """Newest activity first; ``search`` matches titles and message text."""
        return await self.queries.list_conversations(
            agent_id=agent_id,
            owner=owner,
            limit=limit,
            cursor=cursor,
            search=search,
            pinned=pinned,
            archived=archived,
        )

    async def history(
        self,
        conversation: ConversationInfo,
        *,
        limit: int = 50,
        after_seq: int | None = None,
        before_seq: int | None = None,
        parked: bool = False,
    ) -> list[Msg]:
        """Replay: every message of the active branch (``parked``: of every branch)
        ever stored, paged by seq."""
        return await self.queries.page_messages(
            conversation.id,
            limit=limit,
            after_seq=after_seq,
            before_seq=before_seq,
            parked=parked,
        )

    async def branches(
        self, conversation: ConversationInfo, msgs: Sequence[Msg]
    ) -> dict[int, tuple[int, int]]:
        """``seq -> (branch, branches)`` for the edited questions among ``msgs``; one
        query, none when the page holds none."""
        edited = {m.seq: m for m in msgs if m.role is MsgRole.USER and "branchOf" in m.meta}
        if not edited:
            return {}
        groups = sorted({int(m.meta["branchOf"]) for m in edited.values()})
        counts = await self.queries.branch_counts(conversation.id, groups)
        return {
            seq: (int(m.meta.get("branch", 1)), counts.get(int(m.meta["branchOf"]), 1))
            for seq, m in edited.items()
        }

    async def parked(self, conversation: ConversationInfo) -> list[Msg]:
        """The rows of the branches not shown, in seq order (the archive's branches.json)."""
        return await self.queries.parked_messages(conversation.id)

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
            rows = await regenerate.answer_rows(self.db, conversation.id, turns)
        else:
            rows = [
                AnswerRow(m.seq, m.turn_id, m.role is MsgRole.ASSISTANT, m.meta.get("runId"))
                for m in answers
            ]
        return number_versions(rows)

    async def messages_by_id(self, conversation: ConversationInfo, ids: Sequence[int]) -> list[Msg]:
        """Stored messages of one conversation by id, in seq order (others' are ignored)."""
        return await self.queries.messages_by_id(conversation.id or 0, ids)
