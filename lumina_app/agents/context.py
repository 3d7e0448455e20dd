"""Context for a run: system prompt + the last N history messages + the new input."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lumina_app.domain import Msg, MsgRole

ChatMessage = dict[str, str]


@dataclass(slots=True)
class BuiltContext:
    messages: list[ChatMessage]
    history: list[Msg]

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


def build_context(
    system_prompt: str, history: Sequence[Msg], user_input: str, *, window: int
) -> BuiltContext:
    used = usable_history(history, window)
    messages: list[ChatMessage] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.extend({"role": m.role.chat_role, "content": m.content} for m in used)
    messages.append({"role": "user", "content": user_input})
    return BuiltContext(messages=messages, history=used)
