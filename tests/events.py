"""Run events for tests that drive event logs and framing directly."""

from __future__ import annotations

from lumina_app.domain import (
    AnswerChunk,
    RunEvent,
    RunFinished,
    RunStatus,
    Scenario,
    SessionStarted,
    ThinkingChunk,
)


def session(event_id: int = 1, *, conversation: str = "c", run: str = "r") -> RunEvent:
    return RunEvent(
        event_id,
        SessionStarted(
            conversation_uuid=conversation,
            turn_id="msg-1",
            run_id=run,
            scenario=Scenario.NEW,
            agent_id="demo",
            user_message_id=6,
            assistant_message_id=7,
            context_messages=0,
            model="demo",
        ),
    )


def chunk(event_id: int, text: str) -> RunEvent:
    return RunEvent(event_id, AnswerChunk(text))


def thinking(event_id: int, text: str) -> RunEvent:
    return RunEvent(event_id, ThinkingChunk(text))


def result(event_id: int, *, status: str = "complete", message_id: int = 7) -> RunEvent:
    return RunEvent(
        event_id,
        RunFinished(
            run_id="r",
            conversation_uuid="c",
            message_id=message_id,
            turn_id="msg-1",
            status=RunStatus(status),
            content="",
            scenario=Scenario.NEW,
        ),
    )
