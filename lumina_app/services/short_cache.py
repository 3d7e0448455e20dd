"""Small in-process caches for the auth service: what a token resolved to, for a few
seconds, and "at most once a minute" for bookkeeping writes."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class ShortCache(Generic[T]):
    """Values that are trusted for ``seconds``: another process's revocation is noticed
    within that; this process's own is applied at once (``drop``, ``drop_if``)."""

    def __init__(self, seconds: float, max_items: int = 10_000) -> None:
        self.seconds = seconds
        self.max_items = max_items
        self._items: dict[Hashable, tuple[T, float]] = {}

    def get(self, key: Hashable) -> T | None:
        found = self._items.get(key)
        if found is None or found[1] <= time.monotonic():
            return None
        return found[0]

    def put(self, key: Hashable, value: T) -> None:
        if len(self._items) >= self.max_items:
            self._items.clear()
        self._items[key] = (value, time.monotonic() + self.seconds)

    def drop(self, key: Hashable) -> None:
        self._items.pop(key, None)

    def drop_if(self, doomed: Callable[[T], bool]) -> None:
        for key in [k for k, (value, _) in self._items.items() if doomed(value)]:
            del self._items[key]


class Throttle:
    """``due(key)`` is True at most once per ``seconds`` for each key."""

    def __init__(self, seconds: float, max_items: int = 10_000) -> None:
        self.seconds = seconds
        self.max_items = max_items
        self._last: dict[Hashable, float] = {}

    def due(self, key: Hashable) -> bool:
        now = time.monotonic()
        if now - self._last.get(key, -self.seconds) < self.seconds:
            return False
        if len(self._last) >= self.max_items:
            self._last.clear()
        self._last[key] = now
        return True
