"""The Memory page: what the agents know about the person signed in, to search, correct,
pin and delete (through ``MemoryService``, the same path as /api/v1/memories)."""

from __future__ import annotations

import reflex as rx

from lumina_app.domain import InvalidInput, NotFound
from lumina_app.domain.memories import Memory
from lumina_app.domain.views import iso_ms
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.base import AppState

DEFAULT_AGENT = "assistant"


def memory_row(memory: Memory) -> dict[str, str]:
    """A memory as the page shows it (strings only: Reflex vars)."""
    source = chat_url(memory.agent_id, memory.conversation_uuid) if memory.conversation_uuid else ""
    return {
        "id": str(memory.id),
        "text": memory.text,
        "agent": memory.agent_id,
        "pinned": "1" if memory.pinned else "",
        "source": source,
        "seq": str(memory.seq or ""),
        "updated": iso_ms(memory.updated_at),
    }


class MemoriesState(AppState):
    items: list[dict[str, str]] = []
    query: str = ""
    editing: str = ""  # the id of the memory being edited
    message: str = ""
    error: str = ""

    @rx.event
    async def load(self) -> None:
        self.message = self.error = self.editing = self.query = ""
        await self._refresh()

    async def _refresh(self) -> None:
        found = await self._services().memories.list(self._caller(), query=self.query or None)
        self.items = [memory_row(m) for m in found]

    @rx.event
    async def search(self, form: dict) -> None:
        self.query = str(form.get("q", "")).strip()
        await self._act(self._refresh)

    @rx.event
    async def add(self, form: dict) -> None:
        text = str(form.get("text", ""))
        agent = self.agent_id or DEFAULT_AGENT

        async def create() -> None:
            _memory, new = await self._services().memories.create(
                self._caller(), agent_id=agent, text=text
            )
            self.message = "Remembered." if new else "That was already known."

        await self._act(create)

    @rx.event
    def edit(self, memory_id: str) -> None:
        self.editing, self.message, self.error = memory_id, "", ""

    @rx.event
    def cancel(self) -> None:
        self.editing = ""

    @rx.event
    async def save(self, form: dict) -> None:
        memory_id, text = self.editing, str(form.get("text", ""))

        async def change() -> None:
            await self._services().memories.edit(self._caller(), memory_id, text=text)
            self.editing, self.message = "", "Memory corrected."

        await self._act(change)

    @rx.event
    async def pin(self, memory_id: str, pinned: bool) -> None:
        async def change() -> None:
            await self._services().memories.edit(self._caller(), memory_id, pinned=pinned)
            self.message = "Pinned: it goes into every conversation." if pinned else "Unpinned."

        await self._act(change)

    @rx.event
    async def delete(self, memory_id: str) -> None:
        async def forget() -> None:
            await self._services().memories.delete(self._caller(), memory_id)
            self.message = "Forgotten: it is never used again."

        await self._act(forget)

    @rx.event
    async def forget_all(self) -> None:
        async def forget() -> None:
            count = await self._services().memories.forget_all(self._caller())
            self.message = f"Forgot {count} memor{'y' if count == 1 else 'ies'}."

        await self._act(forget)

    async def _act(self, action) -> None:
        """Run one change and show the list as it is now; a refusal becomes the error."""
        self.error = ""
        try:
            await action()
        except (InvalidInput, NotFound) as exc:
            self.message, self.error = "", str(exc)
        await self._refresh()
