"""What an LLM provider yields, and what a run emits to its consumers (UI, SSE clients).

Run events are typed: a :class:`RunEvent` is an id and one payload class per kind. Each
payload renders its public JSON (``wire()``, the family-B ``data:`` of an SSE frame) and a
record for the run event log (``record()``: the wire form plus what only Lumina's own
consumers use, such as the question's seq for the UI).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Self, get_args

# -- provider output -----------------------------------------------------------------------


@dataclass(slots=True)
class TextDelta:
    text: str


@dataclass(slots=True)
class ThinkingDelta:
    text: str


@dataclass(slots=True)
class ToolCall:
    name: str
    arguments: str
    call_id: str = ""


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(slots=True)
class Finish:
    reason: str = "stop"


@dataclass(slots=True)
class ProviderError:
    message: str


LLMEvent = TextDelta | ThinkingDelta | ToolCall | Usage | Finish | ProviderError


# -- run states ----------------------------------------------------------------------------


class Scenario(StrEnum):
    """How a run's context was built (ARCHITECTURE.md § Runs)."""

    NEW = "new"
    CONTINUE = "continue"
    RESUME = "resume"


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETE = "complete"
    STOPPED = "stopped"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class EventType(StrEnum):
    """Run event types; the family-B SSE names (``delta`` is sent as ``agent_output``)."""

    SESSION = "session"
    THINKING = "thinking"
    DELTA = "agent_output"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    ERROR = "error"
    RESULT = "result"


# -- run event payloads --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionStarted:
    """The run is accepted: its question and a ``streaming`` answer row are committed."""

    kind: ClassVar[EventType] = EventType.SESSION
    conversation_uuid: str
    turn_id: str
    run_id: str
    scenario: Scenario
    agent_id: str
    user_message_id: int
    assistant_message_id: int
    context_messages: int
    model: str
    # Not on the wire: what the UI needs to show the question as a stored row.
    user_seq: int = 0
    created_at: str = ""
    answer_seq: int = 0  # after a regenerate it is not user_seq + 1

    def wire(self) -> dict[str, Any]:
        return {
            "conversationId": self.conversation_uuid,
            "messageId": self.turn_id,
            "runId": self.run_id,
            "scenario": self.scenario.value,
            "agentId": self.agent_id,
            "userMessageId": self.user_message_id,
            "assistantMessageId": self.assistant_message_id,
            "contextMessages": self.context_messages,
            "model": self.model,
        }

    def record(self) -> dict[str, Any]:
        return {
            **self.wire(),
            "userSeq": self.user_seq,
            "createdAt": self.created_at,
            "answerSeq": self.answer_seq,
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> SessionStarted:
        return cls(
            conversation_uuid=data["conversationId"],
            turn_id=data["messageId"],
            run_id=data["runId"],
            scenario=Scenario(data["scenario"]),
            agent_id=data["agentId"],
            user_message_id=data["userMessageId"],
            assistant_message_id=data["assistantMessageId"],
            context_messages=data["contextMessages"],
            model=data["model"],
            user_seq=data.get("userSeq", 0),
            created_at=data.get("createdAt", ""),
            answer_seq=data.get("answerSeq", 0),
        )


@dataclass(frozen=True, slots=True)
class _Chunk:
    """A piece of an answer's or of its thinking's text; the subclass says which."""

    text: str

    def wire(self) -> dict[str, Any]:
        return {"text": self.text}

    record = wire

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Self:
        return cls(data["text"])


@dataclass(frozen=True, slots=True)
class AnswerChunk(_Chunk):
    kind: ClassVar[EventType] = EventType.DELTA


@dataclass(frozen=True, slots=True)
class ThinkingChunk(_Chunk):
    kind: ClassVar[EventType] = EventType.THINKING


@dataclass(frozen=True, slots=True)
class ToolCallRequested:
    """The model asked for a tool; ``message_id``/``seq`` name the answer row that asked
    (off the wire: the UI files the call under it)."""

    kind: ClassVar[EventType] = EventType.TOOL_CALL
    call_id: str
    name: str
    arguments: str
    message_id: int = 0
    seq: int = 0
    by_agent: bool = False  # an acp agent's own tool: its text goes on in the same answer
    # A tool the client runs (the Responses API's function tools): the run ends with the
    # call pending. A client's tool named like one of the agent's is not offered, so a
    # call of that name is the agent's (and runs here).
    by_client: bool = False

    def wire(self) -> dict[str, Any]:
        return {"callId": self.call_id, "name": self.name, "arguments": self.arguments}

    def record(self) -> dict[str, Any]:
        record = {**self.wire(), "messageId": self.message_id, "seq": self.seq}
        record = record | {"byAgent": True} if self.by_agent else record
        return record | {"byClient": True} if self.by_client else record

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> ToolCallRequested:
        return cls(
            data["callId"],
            data["name"],
            data["arguments"],
            data.get("messageId", 0),
            data.get("seq", 0),
            data.get("byAgent", False),
            data.get("byClient", False),
        )


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A tool call's result as the model got it; ``content`` is cut to 2 KB in the event
    (the stored TOOL row keeps up to 16 KB)."""

    kind: ClassVar[EventType] = EventType.TOOL_RESULT
    call_id: str
    name: str
    content: str
    is_error: bool
    duration_ms: int

    def wire(self) -> dict[str, Any]:
        return {
            "callId": self.call_id,
            "name": self.name,
            "content": self.content,
            "isError": self.is_error,
            "durationMs": self.duration_ms,
        }

    record = wire

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> ToolCallFinished:
        return cls(
            data["callId"], data["name"], data["content"], data["isError"], data["durationMs"]
        )


@dataclass(frozen=True, slots=True)
class RunFailed:
    """Sent just before the result of a run that ended ``failed``."""

    kind: ClassVar[EventType] = EventType.ERROR
    message: str
    message_id: int

    def wire(self) -> dict[str, Any]:
        return {"message": self.message, "messageId": self.message_id}

    record = wire

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> RunFailed:
        return cls(data["message"], data["messageId"])


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The last event of every run: how it ended and the answer as stored."""

    kind: ClassVar[EventType] = EventType.RESULT
    run_id: str
    conversation_uuid: str
    message_id: int
    turn_id: str
    status: RunStatus
    content: str
    scenario: Scenario
    usage: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    def wire(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "runId": self.run_id,
            "conversationId": self.conversation_uuid,
            "messageId": self.message_id,
            "turnId": self.turn_id,
            "status": self.status.value,
            "content": self.content,
            "usage": self.usage,
            "scenario": self.scenario.value,
        }
        if self.error and self.status is not RunStatus.COMPLETE:
            data["error"] = self.error
        return data

    record = wire

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> RunFinished:
        return cls(
            run_id=data["runId"],
            conversation_uuid=data["conversationId"],
            message_id=data["messageId"],
            turn_id=data["turnId"],
            status=RunStatus(data["status"]),
            content=data["content"],
            scenario=Scenario(data["scenario"]),
            usage=data.get("usage") or {},
            error=data.get("error"),
        )


RunPayload = (
    SessionStarted
    | AnswerChunk
    | ThinkingChunk
    | ToolCallRequested
    | ToolCallFinished
    | RunFailed
    | RunFinished
)
_PAYLOADS: dict[EventType, Any] = {p.kind: p for p in get_args(RunPayload)}


@dataclass(slots=True)
class RunEvent:
    """One event of a run; ``id`` increases by one per event, for replay after reconnect."""

    id: int
    payload: RunPayload

    @property
    def type(self) -> EventType:
        return self.payload.kind

    @property
    def data(self) -> dict[str, Any]:
        """The public JSON of the payload (family B's ``data:``)."""
        return self.payload.wire()

    @property
    def is_terminal(self) -> bool:
        return self.payload.kind is EventType.RESULT

    def record(self) -> dict[str, Any]:
        return self.payload.record()

    @classmethod
    def decode(cls, event_id: int, kind: str, record: dict[str, Any]) -> RunEvent:
        """Back from ``(type, record())`` as a run event log stores it."""
        return cls(event_id, _PAYLOADS[EventType(kind)].from_record(record))
