"""The contract of the system-prompt versions store (``sql.prompts.PromptStore``)."""

from __future__ import annotations

from typing import Protocol


class PromptTexts(Protocol):
    async def save(self, digest: str, text: str) -> None:
        """Keep ``text`` under its SHA-256 ``digest`` (a no-op if it is kept already)."""

    async def get(self, digest: str) -> str | None: ...
