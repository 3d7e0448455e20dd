"""In-process run event buffers; finished ones are dropped some time after they end."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from lumina_app.domain import RunEvent
from lumina_app.domain.heartbeat import HEARTBEAT


@dataclass
class _Buffer:
    events: list[RunEvent] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    done: bool = False
    expires_at: float = float("inf")


class LocalRunEventLog:
    """In-process buffers; finished ones are dropped ``retention`` seconds after they end."""

    shared = False

    def __init__(self, *, retention: float, clock=time.monotonic) -> None:
        self.retention = retention
        self._clock = clock
        self._buffers: dict[str, _Buffer] = {}
        # (expires_at, run_id) in finishing order: the retention is fixed and the clock
        # monotonic, so the oldest entry expires first and expiry never scans live runs.
        self._expiries: deque[tuple[float, str]] = deque()

    def _expire(self) -> None:
        now = self._clock()
        while self._expiries and self._expiries[0][0] <= now:
            expires_at, run_id = self._expiries.popleft()
            buffer = self._buffers.get(run_id)
            if buffer is not None and buffer.expires_at == expires_at:
                del self._buffers[run_id]

    async def publish(self, run_id: str, event: RunEvent) -> None:
        buffer = self._buffers.get(run_id)
        if buffer is None:
            self._expire()
            buffer = self._buffers[run_id] = _Buffer()
        buffer.events.append(event)
        buffer.changed.set()

    async def finish(self, run_id: str) -> None:
        buffer = self._buffers.setdefault(run_id, _Buffer())
        buffer.done = True
        buffer.expires_at = self._clock() + self.retention
        self._expiries.append((buffer.expires_at, run_id))
        buffer.changed.set()

    async def known(self, run_id: str) -> bool:
        self._expire()
        return run_id in self._buffers

    async def subscribe(self, run_id: str, after: int = 0) -> AsyncIterator[RunEvent | None]:
        buffer = self._buffers.get(run_id)
        if buffer is None:
            return
        heartbeat = HEARTBEAT.get()
        if heartbeat is not None:
            heartbeat.wake = buffer.changed.set  # a spurious wake-up is harmless to others
        position = _first_after(buffer.events, after)
        while True:
            while position < len(buffer.events):
                event = buffer.events[position]
                position += 1
                yield event
            if buffer.done:
                return
            buffer.changed.clear()
            if position < len(buffer.events) or buffer.done:
                continue
            if heartbeat is not None and heartbeat.due():
                yield None
                continue
            await buffer.changed.wait()

    async def delete(self, run_id: str) -> None:
        buffer = self._buffers.pop(run_id, None)
        if buffer is not None:
            buffer.done = True
            buffer.changed.set()

    async def close(self) -> None:
        for run_id in list(self._buffers):
            await self.delete(run_id)


def _first_after(events: list[RunEvent], after: int) -> int:
    """Index of the first event with id > ``after`` (ids are 1, 2, 3, ...)."""
    if not events:
        return 0
    index = max(0, min(len(events), after - events[0].id + 1))
    while index < len(events) and events[index].id <= after:
        index += 1
    return index
