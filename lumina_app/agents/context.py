"""Context for a run (DESIGN §5): system prompt, the rolling summary of what left the
window (agents with ``memory.summary``), the last N history messages, the new input.

The history never starts on an assistant or tool message, and a token budget
(``memory.contextTokens``) leaves out the oldest turns whole. :func:`render` is the one
place a context becomes the messages a provider is sent, so a run's context can be rebuilt
from what it was made of (GET /api/v1/runs/{id}/context) and come out the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lumina_app.domain import Msg, MsgRole, Summary
from lumina_app.domain.tokens import estimate_messages

ChatMessage = dict[str, Any]
SUMMARY_PREFIX = "Summary of the earlier conversation: "


@dataclass(slots=True)
class BuiltContext:
    messages: list[ChatMessage]
    history: list[Msg]
    summary: Summary | None = None
    trimmed: int = 0  # window messages the token budget left out
    tokens: int = 0  # the estimate of ``messages``

    @property
    def seq_range(self) -> tuple[int | None, int | None]:
        if not self.history:
            return None, None
        return self.history[0].seq, self.history[-1].seq


def usable_history(history: Sequence[Msg], window: int) -> list[Msg]:
    """The last ``window`` messages, never starting on an assistant or tool message, and
    never a tool call without its results (see :func:`whole_exchanges`).

    Answers cut short (interrupted, stopped, failed) stay in as far as they got; an answer
    that got nowhere (no text, no tool calls) is left out.
    """
    return whole_exchanges([m for m in history if _usable(m)][-window:])


def whole_exchanges(msgs: Sequence[Msg]) -> list[Msg]:
    """``msgs`` from the first user message on, every tool call kept only together with
    all its results, and a result only with its call.

    The one place where the pairing is protected: every cut of a history (the window, a
    rebuild, a resume, a token budget) goes through here. A call whose results are not all
    there (only possible in data from elsewhere, such as an imported archive) loses its
    calls but keeps its text; results whose call is gone are left out.
    """
    start = next((i for i, m in enumerate(msgs) if m.role is MsgRole.USER), len(msgs))
    kept: list[Msg] = []
    i = start
    while i < len(msgs):
        msg = msgs[i]
        i += 1
        if msg.role is MsgRole.TOOL:
            continue  # its call is not before it
        calls = msg.tool_calls
        if not calls:
            kept.append(msg)
            continue
        results = []
        while i < len(msgs) and msgs[i].role is MsgRole.TOOL:
            results.append(msgs[i])
            i += 1
        if {c.get("id") for c in calls} == {r.tool_call_id for r in results}:
            kept += [msg, *results]
        elif msg.content:
            meta = {k: v for k, v in msg.meta.items() if k != "toolCalls"}
            kept.append(dataclasses.replace(msg, meta=meta))
    return kept


def _usable(msg: Msg) -> bool:
    if msg.role is MsgRole.TOOL:
        return True  # an empty result is still the answer to its call
    return bool(msg.content or msg.tool_calls)


def chat_message(msg: Msg) -> ChatMessage:
    """A stored message in the chat-completions shape (``tool_calls``, ``tool_call_id``)."""
    if msg.role is MsgRole.TOOL:
        return {"role": "tool", "tool_call_id": msg.tool_call_id, "content": msg.content}
    calls = msg.tool_calls
    if calls:
        return {
            "role": "assistant",
            "content": msg.content or None,
            "tool_calls": [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls
            ],
        }
    return {"role": msg.role.chat_role, "content": msg.content}


def render(
    system_prompt: str,
    summary: Summary | None,
    history: Sequence[Msg],
    user_input: str,
    recalled: str = "",
) -> list[ChatMessage]:
    """The messages a provider is sent for this context (``recalled``: auto-recall's
    system message, after the summary)."""
    messages: list[ChatMessage] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    if summary is not None and summary.text:
        messages.append({"role": "system", "content": SUMMARY_PREFIX + summary.text})
    if recalled:
        messages.append({"role": "system", "content": recalled})
    messages.extend(chat_message(m) for m in history)
    messages.append({"role": "user", "content": user_input})
    return messages


def build_context(
    system_prompt: str,
    history: Sequence[Msg],
    user_input: str,
    *,
    window: int,
    summary: Summary | None = None,
    token_budget: int | None = None,
    recalled: str = "",
) -> BuiltContext:
    used = usable_history(history, window)
    messages = render(system_prompt, summary, used, user_input, recalled)
    tokens = estimate_messages(messages)
    trimmed = 0
    while token_budget is not None and used and tokens > token_budget:
        cut = _oldest_turn(used)
        trimmed += cut
        used = used[cut:]
        messages = render(system_prompt, summary, used, user_input, recalled)
        tokens = estimate_messages(messages)
    return BuiltContext(messages, used, summary, trimmed, tokens)


def _oldest_turn(history: Sequence[Msg]) -> int:
    """How many messages the oldest turn takes: its question and everything up to the next
    question (so an answer never loses its question, nor a tool call its results)."""
    end = 1
    while end < len(history) and history[end].role is not MsgRole.USER:
        end += 1
    return end
