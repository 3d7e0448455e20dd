"""What every tool is, whatever serves it: a name, a description and a JSON schema for
its arguments (what the model sees), the context a call runs in, and what a call gave."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

# What a stored TOOL row keeps of a result, and what a ``tool_result`` event carries.
RESULT_MAX_BYTES = 16 * 1024
EVENT_MAX_BYTES = 2 * 1024
TRUNCATED = "\n[… truncated by Lumina: the tool returned {total} bytes, the first {kept} are kept]"
EVENT_TRUNCATED = "\n[… {kept} of {total} bytes]"
BUILTIN = "builtin"
# A tool name or call id as the model wrote it is kept to this many characters (a real
# tool's name is at most 64): what is stored, streamed and counted stays small.
NAME_MAX_CHARS = 64
NAME_CUT = "…[{total} characters]"


def capped_name(name: str) -> str:
    """``name`` cut to NAME_MAX_CHARS, with a marker saying how long it was."""
    if len(name) <= NAME_MAX_CHARS:
        return name
    return name[:NAME_MAX_CHARS] + NAME_CUT.format(total=len(name))


def quoted(value: object, limit: int = 40) -> str:
    """``value`` quoted for an error message, cut short: what a model sent can be huge."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ToolError(Exception):
    """A tool call that failed in a way the model should read (bad input, not found…)."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Whom a call is made for: tools that need the calling conversation get it here."""

    agent_id: str
    conversation_uuid: str
    owner: str
    run_id: str
    # The seq of the question the run answers: tools that search the conversation leave
    # that turn out.
    turn_seq: int | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it; ``source`` is ``builtin`` or ``mcp:<server>``."""

    name: str
    description: str
    parameters: dict[str, Any]
    source: str = BUILTIN

    def openai(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


Invoke = Callable[[dict[str, Any], ToolContext], Awaitable["ToolOutput"]]


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool returned, before Lumina caps it."""

    text: str
    is_error: bool = False


@dataclass(slots=True)
class Tool:
    """A tool ready to call: its spec and how to call it (with its arguments and context)."""

    spec: ToolSpec
    invoke: Invoke

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool as ``GET /api/agent/{id}/info`` lists it."""

    name: str
    source: str
    description: str
    available: bool
    reason: str | None = None


@dataclass(slots=True)
class Toolbox:
    """The tools one run may call, and those of the agent that it may not (with why)."""

    tools: dict[str, Tool] = field(default_factory=dict)
    unavailable: list[ToolInfo] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.tools)

    def specs(self) -> list[dict[str, Any]]:
        return [tool.spec.openai() for tool in self.tools.values()]

    def infos(self) -> list[ToolInfo]:
        ready = [
            ToolInfo(t.name, t.spec.source, t.spec.description, True) for t in self.tools.values()
        ]
        return ready + self.unavailable
