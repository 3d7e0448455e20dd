"""Context for a run (DESIGN §5): system prompt, the rolling summary of what left the
window (agents with ``memory.summary``), the last N history messages, the new input.

The history never starts on an assistant or tool message, and a token budget
(``memory.contextTokens``) leaves out the oldest turns whole. :func:`render` is the one
place a context becomes the messages a provider is sent, so a run's context can be rebuilt
from what it was made of (GET /api/v1/runs/{id}/context) and come out the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lumina_app.domain import Msg, MsgRole, Summary
from lumina_app.domain.tokens import estimate_messages

ChatMessage = dict[str, str]
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
    """The last ``window`` messages, never starting on an assistant or tool message.

    Answers cut short (interrupted, stopped, failed) stay in as far as they got; an answer
    that got nowhere carries no text and is left out.
    """
    kept = [m for m in history if m.content and m.role is not MsgRole.TOOL][-window:]
    while kept and kept[0].role in (MsgRole.ASSISTANT, MsgRole.TOOL):
        kept.pop(0)
    return kept


def render(
    system_prompt: str, summary: Summary | None, history: Sequence[Msg], user_input: str
) -> list[ChatMessage]:
    """The messages a provider is sent for this context."""
    messages: list[ChatMessage] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    if summary is not None and summary.text:
        messages.append({"role": "system", "content": SUMMARY_PREFIX + summary.text})
    messages.extend({"role": m.role.chat_role, "content": m.content} for m in history)
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
) -> BuiltContext:
    used = usable_history(history, window)
    messages = render(system_prompt, summary, used, user_input)
    tokens = estimate_messages(messages)
    trimmed = 0
    while token_budget is not None and used and tokens > token_budget:
        cut = _oldest_turn(used)
        trimmed += cut
        used = used[cut:]
        messages = render(system_prompt, summary, used, user_input)
        tokens = estimate_messages(messages)
    return BuiltContext(messages, used, summary, trimmed, tokens)


def _oldest_turn(history: Sequence[Msg]) -> int:
    """How many messages the oldest turn takes: its question and everything up to the next
    question (so an answer never loses its question, nor a tool call its results)."""
    end = 1
    while end < len(history) and history[end].role is not MsgRole.USER:
        end += 1
    return end
