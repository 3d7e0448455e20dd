"""The run and conversation a log line is about, carried by context variables: set where a
run starts, inherited by the tasks it creates, read by the JSON log formatter."""

from __future__ import annotations

from contextvars import ContextVar

run_id: ContextVar[str | None] = ContextVar("lumina_run_id", default=None)
conversation_uuid: ContextVar[str | None] = ContextVar("lumina_conversation_id", default=None)


def bind(*, run: str | None, conversation: str | None) -> None:
    """Name the run and conversation for the rest of this task (and tasks it starts)."""
    run_id.set(run)
    conversation_uuid.set(conversation)
