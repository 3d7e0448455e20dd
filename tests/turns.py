"""Turns written through the production write path, for tests of memory and storage."""

from __future__ import annotations

import secrets

from lumina_app.domain import (
    ConversationInfo,
    ConversationStatus,
    MessageStatus,
    Msg,
    RunRecord,
    RunStatus,
    Scenario,
    new_turn_id,
)
from lumina_app.memory import MemoryManager


def new_run_record(run_id: str) -> RunRecord:
    """A run record for the write path's own tests: agent ``a`` of owner ``o``, demo model,
    no conversation yet (the write that stores it sets it)."""
    return RunRecord(
        run_id=run_id,
        conversation_pk=None,
        agent_id="a",
        owner="o",
        scenario="new",
        provider="demo",
        model="demo",
    )


async def accept_turn(
    memory: MemoryManager, conversation: ConversationInfo, question: str
) -> tuple[Msg, Msg, RunRecord]:
    """A turn's accept transaction alone: the question, a ``streaming`` answer row and the
    run record (``begin_conversation`` for a conversation not stored yet)."""
    turn = new_turn_id()
    record = RunRecord(
        run_id="run-" + secrets.token_hex(8),
        conversation_pk=conversation.id,
        agent_id=conversation.agent_id,
        owner=conversation.owner,
        scenario=Scenario.RESUME,
        provider="test",
        model="test",
    )
    begin = memory.begin_conversation if conversation.id is None else memory.begin_turn
    user, assistant = await begin(
        conversation, Msg.user(question, turn_id=turn), Msg.assistant("", turn_id=turn), record
    )
    return user, assistant, record


async def finish_turn(
    memory: MemoryManager,
    conversation: ConversationInfo,
    assistant: Msg,
    record: RunRecord,
    answer: str,
    *,
    status: MessageStatus = MessageStatus.COMPLETE,
) -> bool:
    """The turn's final answer write (fenced: False if the answer was closed meanwhile)."""
    assistant.content, assistant.status = answer, status
    record.status = RunStatus(status.value)
    ended = (
        ConversationStatus.COMPLETED
        if status in (MessageStatus.COMPLETE, MessageStatus.STOPPED)
        else ConversationStatus.FAILED
    )
    return await memory.finish_answer(
        conversation, assistant, conversation_status=ended, run=record
    )


async def store_turn(
    memory: MemoryManager,
    conversation: ConversationInfo,
    question: str,
    answer: str,
    *,
    status: MessageStatus = MessageStatus.COMPLETE,
) -> tuple[Msg, Msg]:
    """A question and its answer as a run stores them: the accept transaction (question, a
    ``streaming`` answer row and the run record), then the final answer write."""
    user, assistant, record = await accept_turn(memory, conversation, question)
    await finish_turn(memory, conversation, assistant, record, answer, status=status)
    return user, assistant
