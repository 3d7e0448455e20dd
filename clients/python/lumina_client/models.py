"""What the server answers, as typed objects. Each model names the OpenAPI schema it reads
(``schema_name``): a test compares every field here with the server's ``/openapi.json``.
Unknown fields are ignored, so a newer server does not break an older client."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)
    schema_name: ClassVar[str | None] = None


class Conversation(_Model):
    schema_name: ClassVar[str | None] = "ConversationOut"
    id: str = Field(alias="uuid")
    agent_id: str = Field(alias="agentId")
    title: str
    status: str
    message_count: int = Field(alias="messageCount")
    last_seq: int = Field(alias="lastSeq")
    created_at: str = Field(alias="createdAt")
    updated_at: str = Field(alias="updatedAt")
    parent_id: str | None = Field(default=None, alias="parentUuid")
    temporary: bool | None = None
    pinned: bool | None = None  # sent only when true
    archived_at: str | None = Field(default=None, alias="archivedAt")  # only when archived


class Message(_Model):
    schema_name: ClassVar[str | None] = "MessageOut"
    id: int
    seq: int
    turn_id: str = Field(alias="turnId")
    role: str  # USER | ASSISTANT | SYSTEM | TOOL
    content: str
    status: str  # complete | streaming | stopped | interrupted | failed | superseded
    created_at: str = Field(alias="createdAt")
    meta: dict[str, Any] = {}


class RunAccepted(_Model):
    schema_name: ClassVar[str | None] = "RunAccepted"
    run_id: str = Field(alias="runId")
    conversation_id: str = Field(alias="conversationId")
    status: str
    scenario: str


class Run(_Model):
    schema_name: ClassVar[str | None] = "RunOut"
    run_id: str = Field(alias="runId")
    conversation_id: str = Field(alias="conversationId")
    agent_id: str = Field(alias="agentId")
    status: str
    scenario: str
    model: str
    message_id: int | None = Field(alias="messageId")
    content: str | None = None
    error: str | None = None


class Answer(_Model):
    """A whole answer (``runs.execute``: execute/sync)."""

    schema_name: ClassVar[str | None] = "SyncResult"
    run_id: str = Field(alias="runId")
    conversation_id: str = Field(alias="conversationId")
    message_id: int = Field(alias="messageId")
    status: str
    answer: str
    scenario: str
    error: str | None = None


class RunContext(_Model):
    """Exactly what a run's model was sent, and what it was made of."""

    schema_name: ClassVar[str | None] = "RunContextOut"
    run_id: str = Field(alias="runId")
    scenario: str
    model: str
    messages: list[dict[str, Any]]
    memories: list[int] = []
    tokens: int


class Hit(_Model):
    schema_name: ClassVar[str | None] = "HitOut"
    conversation_id: str = Field(alias="conversationId")
    title: str
    seq: int
    role: str
    snippet: str  # HTML: the text escaped, matches in <mark>
    score: float
    created_at: str = Field(alias="createdAt")


class Memory(_Model):
    schema_name: ClassVar[str | None] = "MemoryOut"
    id: int
    agent_id: str = Field(alias="agentId")
    text: str
    status: str
    pinned: bool
    conversation_id: str | None = Field(default=None, alias="conversationId")
    origin: str | None = None
    created_at: str = Field(alias="createdAt")
    updated_at: str = Field(alias="updatedAt")


# -- stream events (execute/stream's SSE frames, docs/API.md) --------------------------------


class _Event(_Model):
    event_id: int | None = None  # the SSE id: send it as Last-Event-ID to resume


class SessionEvent(_Event):
    type: Literal["session"] = "session"
    conversation_id: str = Field(alias="conversationId")
    run_id: str = Field(alias="runId")
    scenario: str


class ChunkEvent(_Event):
    type: Literal["chunk"] = "chunk"
    text: str


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    call_id: str = Field(alias="callId")
    name: str
    arguments: str = ""


class ToolResultEvent(_Event):
    type: Literal["tool_result"] = "tool_result"
    call_id: str = Field(alias="callId")
    name: str
    content: str = ""
    is_error: bool = Field(default=False, alias="isError")


class DoneEvent(_Event):
    type: Literal["done"] = "done"
    message_id: int | None = Field(default=None, alias="messageId")
    status: str = "complete"  # or stopped / interrupted


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    error: str
    message_id: int | None = Field(default=None, alias="messageId")


StreamEvent = SessionEvent | ChunkEvent | ToolCallEvent | ToolResultEvent | DoneEvent | ErrorEvent


def event_of(data: dict[str, Any], event_id: int | None) -> StreamEvent | None:
    """One v1 frame's JSON as its typed event; None for a frame this client does not know."""
    if "chunk" in data:
        return ChunkEvent(text=data["chunk"], event_id=event_id)
    if "toolCall" in data:
        return ToolCallEvent.model_validate({**data["toolCall"], "event_id": event_id})
    if "toolResult" in data:
        return ToolResultEvent.model_validate({**data["toolResult"], "event_id": event_id})
    if data.get("done"):
        return DoneEvent.model_validate({**data, "event_id": event_id})
    if "error" in data:
        return ErrorEvent.model_validate({**data, "event_id": event_id})
    if "runId" in data:
        return SessionEvent.model_validate({**data, "event_id": event_id})
    return None


RESPONSE_MODELS: tuple[type[_Model], ...] = (
    Conversation,
    Message,
    RunAccepted,
    Run,
    Answer,
    RunContext,
    Hit,
    Memory,
)
