"""Typed run events: what each kind puts on the wire (both families, byte for byte), and
that the run event log's record form comes back as the same event."""

from __future__ import annotations

import pytest

from lumina_app.api.sse import named_frames, v1_frames
from lumina_app.domain import (
    AnswerChunk,
    RunEvent,
    RunFailed,
    RunFinished,
    RunStatus,
    Scenario,
    SessionStarted,
    ThinkingChunk,
    ToolCallFinished,
    ToolCallRequested,
)

pytestmark = pytest.mark.unit

SESSION = SessionStarted(
    conversation_uuid="c-1",
    turn_id="msg-1",
    run_id="run-0123456789abcdef",
    scenario=Scenario.CONTINUE,
    agent_id="demo",
    user_message_id=11,
    assistant_message_id=12,
    context_messages=4,
    model="demo",
    user_seq=5,
    created_at="2026-11-30T10:00:00.000Z",
)
FINISHED = RunFinished(
    run_id="run-0123456789abcdef",
    conversation_uuid="c-1",
    message_id=12,
    turn_id="msg-1",
    status=RunStatus.STOPPED,
    content="half",
    scenario=Scenario.CONTINUE,
    usage={"promptTokens": 3},
    error="stopped by the user",
)
PAYLOADS = [
    SESSION,
    AnswerChunk("你好 👋"),
    ThinkingChunk("hmm"),
    ToolCallRequested("call-1", "current_time", "{}", 12, 6),
    ToolCallFinished("call-1", "current_time", "2026-11-30T10:00:00+00:00", False, 3),
    RunFailed("boom", 12),
    FINISHED,
]


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: type(p).__name__)
def test_a_recorded_event_decodes_to_the_same_event(payload) -> None:
    event = RunEvent(3, payload)
    assert RunEvent.decode(3, event.type.value, event.record()) == event


def test_the_session_frame_keeps_what_only_the_ui_uses_off_the_wire() -> None:
    assert named_frames(RunEvent(1, SESSION)) == (
        b'event: session\nid: 1\ndata: {"conversationId": "c-1", "messageId": "msg-1", '
        b'"runId": "run-0123456789abcdef", "scenario": "continue", "agentId": "demo", '
        b'"userMessageId": 11, "assistantMessageId": 12, "contextMessages": 4, "model": "demo"}'
        b"\n\n"
    )
    assert RunEvent(1, SESSION).record()["userSeq"] == 5


def test_v1_frames() -> None:
    assert v1_frames(RunEvent(1, SESSION)) == (
        b'id: 1\ndata: {"conversationId": "c-1", "runId": "run-0123456789abcdef", '
        b'"scenario": "continue"}\n\n'
    )
    assert v1_frames(RunEvent(2, AnswerChunk('say "你"\n'))) == (
        'id: 2\ndata: {"chunk": "say \\"你\\"\\n"}\n\n'.encode()
    )
    assert v1_frames(RunEvent(3, ThinkingChunk("hmm"))) is None
    assert v1_frames(RunEvent(4, RunFailed("boom", 12))) == (
        b'id: 4\ndata: {"error": "boom", "messageId": 12}\n\n'
    )
    assert v1_frames(RunEvent(5, FINISHED)) == (
        b'id: 5\ndata: {"done": true, "messageId": 12, "status": "stopped"}\n\n'
    )


def test_a_failed_run_ends_v1_with_its_error_frame_only() -> None:
    failed = RunFinished(
        run_id="r", conversation_uuid="c", message_id=1, turn_id="t",
        status=RunStatus.FAILED, content="", scenario=Scenario.NEW, error="boom",
    )  # fmt: skip
    assert v1_frames(RunEvent(9, failed)) is None
    assert RunEvent(9, failed).data["error"] == "boom"
    complete = RunFinished(
        run_id="r", conversation_uuid="c", message_id=1, turn_id="t",
        status=RunStatus.COMPLETE, content="ok", scenario=Scenario.NEW, error="ignored",
    )  # fmt: skip
    assert "error" not in RunEvent(9, complete).data


CALL = ToolCallRequested("call_1", "calculator", '{"expression": "6*7"}', 12, 6)
RESULT = ToolCallFinished("call_1", "calculator", "42", False, 3)


def test_tool_frames_of_family_b() -> None:
    assert named_frames(RunEvent(2, CALL)) == (
        b'event: tool_call\nid: 2\ndata: {"callId": "call_1", "name": "calculator", '
        b'"arguments": "{\\"expression\\": \\"6*7\\"}"}\n\n'
    )
    assert named_frames(RunEvent(3, RESULT)) == (
        b'event: tool_result\nid: 3\ndata: {"callId": "call_1", "name": "calculator", '
        b'"content": "42", "isError": false, "durationMs": 3}\n\n'
    )
    # What only the UI uses (the asking answer row) stays in the record, off the wire.
    assert RunEvent(2, CALL).record()["messageId"] == 12


def test_tool_frames_of_v1_come_between_chunks() -> None:
    assert v1_frames(RunEvent(2, CALL)) == (
        b'id: 2\ndata: {"toolCall": {"callId": "call_1", "name": "calculator", '
        b'"arguments": "{\\"expression\\": \\"6*7\\"}"}}\n\n'
    )
    assert v1_frames(RunEvent(3, RESULT)) == (
        b'id: 3\ndata: {"toolResult": {"callId": "call_1", "name": "calculator", '
        b'"content": "42", "isError": false, "durationMs": 3}}\n\n'
    )
