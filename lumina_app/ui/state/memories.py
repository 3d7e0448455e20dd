"""The Memory page: what the agents know about the person signed in, to search, correct,
pin and delete (through ``MemoryService``, the same path as /api/v1/memories); each current
memory with the earlier versions it replaced (#42)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TypedDict

import reflex as rx

from lumina_app.domain import InvalidInput, NotFound
from lumina_app.domain.memories import Memory
from lumina_app.domain.views import iso_ms
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.base import AppState

DEFAULT_AGENT = "assistant"


class VersionView(TypedDict):
    """An earlier version of a memory: its text and when it held (dates, UTC)."""

    id: str
    text: str
    since: str
    until: str


class MemoryView(TypedDict):
    id: str
    text: str
    agent: str
    pinned: str  # "1" or ""
    source: str
    seq: str
    origin: str  # "added over MCP by …", or "" (by hand, or from ``source``)
    updated: str
    history: list[VersionView]  # the versions it replaced, newest first


def _day(when: datetime | None) -> str:
    return when.date().isoformat() if when else ""


def memory_row(memory: Memory, earlier: Sequence[Memory] = ()) -> MemoryView:
    """A memory as the page shows it (strings only: Reflex vars)."""
    source = chat_url(memory.agent_id, memory.conversation_uuid) if memory.conversation_uuid else ""
    return {
        "id": str(memory.id),
        "text": memory.text,
        "agent": memory.agent_id,
        "pinned": "1" if memory.pinned else "",
        "source": source,
        "seq": str(memory.seq or ""),
        "origin": memory.origin or "",
        "updated": iso_ms(memory.updated_at),
        "history": [
            {
                "id": str(m.id),
                "text": m.text,
                "since": _day(m.valid_from or m.created_at),
                "until": _day(m.valid_until),
            }
            for m in earlier
        ],
    }


class MemoriesState(AppState):
    items: list[MemoryView] = []
    query: str = ""
    editing: str = ""  # the id of the memory being edited
    message: str = ""
    error: str = ""

    @rx.event
    async def load(self) -> None:
        self.message = self.error = self.editing = self.query = ""
        await self._refresh()

    async def _refresh(self) -> None:
        memories = self._services().memories
        found = await memories.list(self._caller(), query=self.query or None)
        earlier = await memories.earlier(self._caller(), found)
        self.items = [memory_row(m, earlier[m.id]) for m in found]

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
        changed = bool(form.get("supersede"))  # a newer fact, not a correction

        async def change() -> None:
            await self._services().memories.edit(
                self._caller(), memory_id, text=text, supersede=changed
            )
            self.editing = ""
            self.message = (
                "Updated: the old fact is kept as history." if changed else ("Memory corrected.")
            )

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
