"""Counted slots that expire: at most a limit of live members under each key, each member
gone ``ttl`` seconds after it was taken or last renewed. What the sign-in limits (one
member per attempt, for a minute) and the per-owner run cap (one member per run, for its
lease) count with.

In process: dicts. With Redis: one sorted set per key (member → expiry), taken and
renewed by Lua scripts on Redis's own clock, so every worker and instance counts together
and a check-and-take is atomic; while Redis is unreachable, in this process.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol


class Slots(Protocol):
    shared: bool  # True when other processes count in the same slots

    async def take(self, limits: Mapping[str, int], member: str, ttl: float) -> float:
        """Add ``member`` under every key of ``limits`` unless one already holds its limit
        of live members: then add nothing and return the seconds until one frees (else 0)."""

    async def renew(self, keys: Iterable[str], member: str, ttl: float) -> None:
        """``member`` lives ``ttl`` seconds more under ``keys`` (taken again if lost)."""

    async def release(self, keys: Iterable[str], member: str) -> None: ...

    async def clear(self, key: str) -> None:
        """Every member under ``key`` is gone."""

    async def close(self) -> None: ...
