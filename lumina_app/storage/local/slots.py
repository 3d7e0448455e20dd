"""Expiring slots inside one process (``storage/slots.py``): dicts of member → deadline."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

_SWEEP_EVERY = 1024  # takes between sweeps of keys nobody touched again


class LocalSlots:
    shared = False

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._keys: dict[str, dict[str, float]] = {}
        self._takes = 0

    async def take(self, limits: Mapping[str, int], member: str, ttl: float) -> float:
        now = self._clock()
        self._takes += 1
        if self._takes % _SWEEP_EVERY == 0:
            for key in list(self._keys):
                self._live(key, now)
        wait = 0.0
        for key, limit in limits.items():
            live = self._live(key, now)
            if live is not None and len(live) >= limit:
                wait = max(wait, min(live.values()) - now)
        if wait > 0:
            return wait  # infinite while the full key's members never expire
        for key in limits:
            self._keys.setdefault(key, {})[member] = now + ttl
        return 0.0

    async def renew(self, keys: Iterable[str], member: str, ttl: float) -> None:
        deadline = self._clock() + ttl
        for key in keys:
            self._keys.setdefault(key, {})[member] = deadline

    async def release(self, keys: Iterable[str], member: str) -> None:
        for key in keys:
            live = self._keys.get(key)
            if live is not None:
                live.pop(member, None)
                if not live:
                    del self._keys[key]

    async def clear(self, key: str) -> None:
        self._keys.pop(key, None)

    async def close(self) -> None:
        self._keys.clear()

    def holds(self, member: str) -> bool:
        return any(member in live for live in self._keys.values())

    def _live(self, key: str, now: float) -> dict[str, float] | None:
        live = self._keys.get(key)
        if live is None:
            return None
        for member in [m for m, deadline in live.items() if deadline <= now]:
            del live[member]
        if not live:
            del self._keys[key]
            return None
        return live
