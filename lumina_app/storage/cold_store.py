"""The cold store contract: the system of record for conversations and every message, as
the memory layer uses it (``sql.cold_store.SQLColdStore`` is the one there is).

It writes, and reads the window (the last messages, the last question) that a write or
a hot-window rebuild needs; every other read is a query of ``sql.conversation_queries``
behind the memory layer's repositories. Every write is one transaction; a message's
``seq`` is given under the conversation row's lock, so concurrent writers get gapless,
strictly increasing seqs. Conversations are addressed by their row id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from lumina_app.domain import (
    ConversationInfo,
    ConversationStatus,
    MessageStatus,
    Msg,
    RunRecord,
    Summary,
)
from lumina_app.domain.ids import ConversationPk


@dataclass(frozen=True, slots=True)
class Deleted:
    """What a delete did: the rows removed (ids, turn ids) and the new ``last_seq``; or
    ``busy`` when a run holds the conversation (nothing removed)."""

    message_ids: tuple[int, ...] = ()
    turn_ids: tuple[str, ...] = ()
    last_seq: int = 0
    busy: bool = False


class ColdStore(Protocol):
    # -- conversations ---------------------------------------------------------------

    async def create_conversation(
        self,
        *,
        agent_id: str,
        title: str = "",
        owner: str = "",
        conversation_uuid: str | None = None,
        created_at: datetime | None = None,
        temporary: bool = False,
    ) -> ConversationInfo: ...

    async def start_conversation(
        self,
        conversation: ConversationInfo,
        msgs: Sequence[Msg],
        *,
        status: ConversationStatus | None = None,
        run: RunRecord | None = None,
    ) -> list[Msg]:
        """Insert a new conversation (``ConversationInfo.new``) with its first messages and
        the run answering them, in one transaction."""

    async def fork_conversation(
        self, source: ConversationInfo, at_seq: int, *, title: str, owner: str
    ) -> ConversationInfo:
        """A copy of ``source`` up to ``at_seq`` (messages and the summaries covering no
        more) as a new conversation."""

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
        """True; a conversation that is not there: ConversationNotFound. ``archived``
        sets ``archived_at`` to now (true) or clears it (false)."""

    async def retitle(self, conversation_uuid: str, title: str, *, replacing: str) -> bool:
        """``title`` only while the title is still ``replacing`` (a proposal: a rename by
        the person meanwhile wins); whether it was stored. ``updated_at`` is left alone."""

    async def delete_conversation(self, conversation_pk: ConversationPk) -> list[str]:
        """The conversation with its messages, summaries and runs; returns the run ids."""

    async def delete_conversations(
        self, conversation_pks: Sequence[ConversationPk]
    ) -> dict[ConversationPk, list[str]]:
        """Several conversations with all their rows in one transaction; each one's run ids."""

    async def delete_message(self, conversation_pk: ConversationPk, message_id: int) -> Deleted:
        """One message (and its calls' TOOL rows) removed, the summaries reaching it too,
        ``last_seq`` bumped past it; nothing while the conversation is running."""

    # -- messages --------------------------------------------------------------------

    async def append_messages(
        self,
        conversation_pk: ConversationPk,
        msgs: Sequence[Msg],
        *,
        status: ConversationStatus | None = None,
        tool_calls: int = 0,
        run: RunRecord | None = None,
    ) -> list[Msg]:
        """``msgs`` with the next seqs (and ``run``, pointing at them): one transaction."""

    async def flush_answer(self, message_id: int, content: str) -> bool:
        """A growing answer's text, fenced on it still ``streaming``."""

    def withdraw_flush(self, message_id: int) -> None:
        """The answer's final write comes next: a flush of it not sent yet is dropped."""

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
        """An answer's text (and status, meta); the final one also settles the conversation
        and the run. ``only_streaming``: False, nothing written, if it was closed."""

    async def settle_with_rows(
        self,
        conversation_pk: ConversationPk,
        answer: Msg,
        rows: Sequence[Msg],
        *,
        conversation_status: ConversationStatus | None = None,
        run: RunRecord | None = None,
    ) -> bool:
        """Settle a streaming answer (fenced) and insert ``rows`` after it: one transaction."""

    async def answer_again(
        self,
        conversation_pk: ConversationPk,
        question: Msg,
        answer: Msg,
        *,
        status: ConversationStatus,
        run: RunRecord,
    ) -> int:
        """Supersede what follows ``question`` and open ``answer`` after it, with ``run``."""

    async def last_messages(
        self,
        conversation_pk: ConversationPk,
        n: int,
        *,
        before_seq: int | None = None,
        after_seq: int | None = None,
    ) -> list[Msg]:
        """The last ``n`` messages a context can hold, in seq order: one indexed query."""

    async def last_question(self, conversation_pk: ConversationPk) -> Msg | None: ...

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
        """Park the active branch from ``original_seq`` on, open ``question`` as its next
        branch with ``answer`` and ``run``; the new branch's number."""

    async def switch_branch(self, conversation_pk: ConversationPk, group: int, branch: int) -> int:
        """Make a branch of a question group the active one; the first seq that changed."""

    # -- summaries -------------------------------------------------------------------

    async def add_summary(
        self, conversation_pk: ConversationPk, *, covered_to_seq: int, text: str, model: str
    ) -> Summary: ...

    async def ping(self) -> None:
        """Raises if the store cannot be reached."""
