"""In-process hot window for single-process use: a bounded LRU of per-conversation deques."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence

from lumina_app.domain import Msg, Summary
from lumina_app.storage.hot_window import Window


class LocalHotWindow:
    """Same contract as the Redis tier; forgets the least recently used conversations once
    it holds ``max_conversations`` or its windows' text passes ``max_chars`` characters (a
    count alone let 10,000 windows of long messages hold gigabytes of this process). A
    forgotten window is rebuilt from SQL on its next read, as after a restart."""

    name = "memory"

    def __init__(self, *, window: int, max_conversations: int, max_chars: int = 50_000_000) -> None:
        self.window = window
        self.max_conversations = max_conversations
        self.max_chars = max_chars
        self._entries: OrderedDict[str, tuple[deque[Msg], int, Summary | None]] = OrderedDict()
        self._held: dict[str, int] = {}  # characters per window, summed in ``chars``
        self.chars = 0

    def __len__(self) -> int:
        return len(self._entries)

    async def read(self, conversation_uuid: str) -> Window | None:
        entry = self._entries.get(conversation_uuid)
        if entry is None:
            return None
        self._entries.move_to_end(conversation_uuid)
        return Window(list(entry[0]), entry[1], entry[2])

    async def append(self, conversation_uuid: str, msgs: Sequence[Msg]) -> bool:
        entry = self._entries.get(conversation_uuid)
        if entry is None or not msgs:
            return entry is not None
        items, high_water, summary = entry
        if msgs[0].seq > high_water + 1:
            self._remove(conversation_uuid)
            return False
        if msgs[-1].seq <= high_water:  # out of order: the window may lack them
            return False
        # rows at or below the mark are there already (a rebuild ran in between)
        items.extend(m for m in msgs if m.seq > high_water)
        self._entries[conversation_uuid] = (items, msgs[-1].seq, summary)
        self._entries.move_to_end(conversation_uuid)
        self._count(conversation_uuid)
        return True

    async def replace(
        self,
        conversation_uuid: str,
        msgs: Sequence[Msg],
        high_water: int,
        summary: Summary | None = None,
    ) -> None:
        self._entries[conversation_uuid] = (deque(msgs, maxlen=self.window), high_water, summary)
        self._entries.move_to_end(conversation_uuid)
        self._count(conversation_uuid)

    async def set_summary(self, conversation_uuid: str, summary: Summary) -> None:
        entry = self._entries.get(conversation_uuid)
        if entry is not None:
            self._entries[conversation_uuid] = (entry[0], entry[1], summary)
            self._count(conversation_uuid)

    async def delete(self, conversation_uuid: str) -> None:
        self._remove(conversation_uuid)

    async def status(self) -> str:
        return "ok"

    async def close(self) -> None:
        self._entries.clear()
        self._held.clear()
        self.chars = 0

    def _count(self, conversation_uuid: str) -> None:
        """Count the window's text again (its deque drops the oldest silently), then
        forget the least recently used until both bounds hold; a window alone over the
        text budget is not kept."""
        items, _high_water, summary = self._entries[conversation_uuid]
        chars = sum(len(m.content) for m in items) + (len(summary.text) if summary else 0)
        self.chars += chars - self._held.get(conversation_uuid, 0)
        self._held[conversation_uuid] = chars
        while self._entries and (
            len(self._entries) > self.max_conversations or self.chars > self.max_chars
        ):
            self._remove(next(iter(self._entries)))

    def _remove(self, conversation_uuid: str) -> None:
        if self._entries.pop(conversation_uuid, None) is not None:
            self.chars -= self._held.pop(conversation_uuid)
