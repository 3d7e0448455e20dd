"""What one request may bring as messages, the same at every OpenAI door (chat
completions, ``/v1/responses`` with or without a conversation, ``/compact``, Conversations
items): each message held to what a new question is (``LUMINA_MAX_TASK_CHARS``), at most
``LUMINA_GATEWAY_MAX_MESSAGES`` of them. Checked before anything is stored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lumina_app.domain import InputTooLarge, InvalidInput
from lumina_app.domain.transcript import Line


@dataclass(frozen=True, slots=True)
class InputCaps:
    max_messages: int = 1000
    max_chars: int = 32_000

    def check(self, lines: Sequence[Line], *, field: str = "messages") -> None:
        """413 naming the limit past either cap; a user message without text (or files)
        is a 400."""
        if len(lines) > self.max_messages:
            raise InputTooLarge(
                f"{field}: {len(lines)} messages; the limit is {self.max_messages} "
                "(LUMINA_GATEWAY_MAX_MESSAGES)"
            )
        for index, line in enumerate(lines):
            self.check_text(line.text, f"{field}[{index}]")
            if line.role == "user" and not line.text.strip() and not line.files:
                raise InvalidInput(f"{field}[{index}]: a user message must have text")

    def check_text(self, text: str, where: str) -> None:
        if len(text) > self.max_chars:
            raise InputTooLarge(
                f"{where} is {len(text)} characters; the limit is {self.max_chars} "
                "(LUMINA_MAX_TASK_CHARS)"
            )
