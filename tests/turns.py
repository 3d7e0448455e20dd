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
    user, assistant = await memory.begin_turn(
        conversation, Msg.user(question, turn_id=turn), Msg.assistant("", turn_id=turn), record
    )
    assistant.content, assistant.status = answer, status
    record.status = RunStatus(status.value)
    ended = (
        ConversationStatus.COMPLETED
        if status in (MessageStatus.COMPLETE, MessageStatus.STOPPED)
        else ConversationStatus.FAILED
    )
    await memory.finish_answer(conversation, assistant, conversation_status=ended, run=record)
    return user, assistant
