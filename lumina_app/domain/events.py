"""What an LLM provider yields, and what a run emits to its consumers (UI, SSE clients)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


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


class Scenario(StrEnum):
    """How a run's context was built (DESIGN §5)."""

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
    ERROR = "error"
    RESULT = "result"


@dataclass(slots=True)
class RunEvent:
    """One event of a run; ``id`` increases by one per event, for replay after reconnect."""

    id: int
    type: EventType
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def is_terminal(self) -> bool:
        return self.type is EventType.RESULT
