"""System prompt versions: each distinct prompt an agent ran with is kept once, by hash, so
a run's record can say exactly which prompt it used (an agent's files may change later)."""

from __future__ import annotations

import hashlib

from lumina_app.storage.prompts import PromptTexts


class PromptVersions:
    def __init__(self, store: PromptTexts, *, cache_size: int = 1024) -> None:
        self.store = store
        self.cache_size = cache_size
        self._known: set[str] = set()

    async def remember(self, text: str) -> str:
        """The prompt's hash; stored the first time this process sees it."""
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest not in self._known:
            await self.store.save(digest, text)
            if len(self._known) >= self.cache_size:
                self._known.clear()
            self._known.add(digest)
        return digest

    async def text(self, digest: str) -> str | None:
        return await self.store.get(digest)
