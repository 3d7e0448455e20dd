"""In-process hot window for single-process use: a bounded LRU of per-conversation deques."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence

from lumina_app.domain import Msg, Summary
from lumina_app.storage.hot_window import Window


class LocalHotWindow:
    """Same contract as the Redis tier; forgets the least recently used conversations."""

    name = "memory"

    def __init__(self, *, window: int, max_conversations: int) -> None:
        self.window = window
        self.max_conversations = max_conversations
        self._entries: OrderedDict[str, tuple[deque[Msg], int, Summary | None]] = OrderedDict()

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
            del self._entries[conversation_uuid]
            return False
        if msgs[-1].seq <= high_water:  # out of order: the window may lack them
            return False
        # rows at or below the mark are there already (a rebuild ran in between)
        items.extend(m for m in msgs if m.seq > high_water)
        self._entries[conversation_uuid] = (items, msgs[-1].seq, summary)
        self._entries.move_to_end(conversation_uuid)
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
        while len(self._entries) > self.max_conversations:
            self._entries.popitem(last=False)

    async def set_summary(self, conversation_uuid: str, summary: Summary) -> None:
        entry = self._entries.get(conversation_uuid)
        if entry is not None:
            self._entries[conversation_uuid] = (entry[0], entry[1], summary)

    async def delete(self, conversation_uuid: str) -> None:
        self._entries.pop(conversation_uuid, None)

    async def status(self) -> str:
        return "ok"

    async def close(self) -> None:
        self._entries.clear()
