"""One step of a run: one provider call, streamed into one answer row, and — when the
model asks for tools — its calls and their results, stored as the TOOL rows after it."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from lumina_app.agents.run.flusher import AnswerFlusher
from lumina_app.agents.tools.runner import CallResult
from lumina_app.agents.tools.spec import (
    EVENT_MAX_BYTES,
    EVENT_TRUNCATED,
    NAME_MAX_CHARS,
    capped_name,
)
from lumina_app.domain import Msg, ToolCall, ToolCallFinished
from lumina_app.domain.text import clip_utf8, storable


@dataclass(slots=True)
class Step:
    flusher: AnswerFlusher
    thinking: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None
    calling: bool = False  # its calls are running (a stop now records them as cancelled)
    calls_started: float = 0.0
    client_calls: list[ToolCall] = field(default_factory=list)  # the client runs these
    agent_tools: list[dict[str, Any]] = field(default_factory=list)  # an acp agent's own

    def add_call(self, call: ToolCall) -> None:
        """A call as the model asked for it, with an id unique in the step, its name and id
        of a bounded length (an overlong id is replaced) and text every database can store."""
        taken = {c.call_id for c in self.calls}
        call_id = storable(call.call_id)
        if not call_id or len(call_id) > NAME_MAX_CHARS:
            call_id = "call_" + secrets.token_hex(6)
        while call_id in taken:
            call_id += "_" + secrets.token_hex(2)
        name = storable(capped_name(call.name))
        self.calls.append(ToolCall(name, storable(call.arguments), call_id))

    def meta(self, base: dict[str, Any], results: dict[str, CallResult] | None) -> dict[str, Any]:
        """The answer row's meta; its calls only with their results (never one without)."""
        meta = dict(base)
        meta.update(usage=self.usage, finishReason=self.finish_reason)
        if self.thinking:
            meta["thinking"] = "".join(self.thinking)
        if self.agent_tools:
            meta["agentTools"] = self.agent_tools
        if results or self.client_calls:
            client = {c.call_id for c in self.client_calls}
            meta["toolCalls"] = [
                {"id": c.call_id, "name": c.name, "arguments": c.arguments}
                | ({"client": True} if c.call_id in client else {})
                for c in self.calls
            ]
        return meta


def tool_rows(calls: list[ToolCall], results: dict[str, CallResult], turn_id: str) -> list[Msg]:
    """The TOOL rows of a step, in the order the model asked for the calls (a client's
    calls have none yet)."""
    rows = []
    for call in calls:
        result = results.get(call.call_id)
        if result is None:  # a client's call: its output comes with the client's next turn
            continue
        meta: dict[str, Any] = {"isError": result.is_error, "durationMs": result.duration_ms}
        if result.truncated:
            meta["truncated"] = True
        rows.append(
            Msg.tool(
                result.content, call_id=call.call_id, name=call.name, turn_id=turn_id, meta=meta
            )
        )
    return rows


def finished_event(result: CallResult) -> ToolCallFinished:
    content, _ = clip_utf8(result.content, EVENT_MAX_BYTES, EVENT_TRUNCATED)
    return ToolCallFinished(
        result.call.call_id, result.call.name, content, result.is_error, result.duration_ms
    )
