"""At most LUMINA_MAX_STREAMS_PER_OWNER open SSE streams per owner, so one key cannot hold
the server's connections (docs/SECURITY.md). With Redis the count is shared by every worker
and instance; without it, it is this process's.

Shared slots are the per-owner run cap's (``storage/slots.py``, one member per stream),
leased the same way: ``3 × LUMINA_RUN_LEASE_SECONDS``, renewed by one task per process
every lease while its streams are open, so the slots of a killed worker free themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets

from lumina_app.domain import TooManyStreams
from lumina_app.domain.tasks import keep
from lumina_app.storage.slots import Slots


class StreamCap:
    """Open streams per owner: counted in ``slots`` when they are shared between processes,
    else in this process (a dict: no lease, nothing to renew)."""

    def __init__(self, slots: Slots, *, limit: int, lease_seconds: float) -> None:
        self._slots = slots if slots.shared else None
        self.limit = limit
        self.lease_seconds = lease_seconds
        self._open: dict[str, int] = {}  # owner -> streams, in this process
        self._held: dict[str, str] = {}  # shared slot member -> owner
        self._tasks: set[asyncio.Task] = set()
        self._renewer: asyncio.Task | None = None

    async def forget(self, owner: str) -> None:
        """The owner's shared slots gone (a deleted account leaves no key behind)."""
        if self._slots is not None:
            await self._slots.clear(_key(owner))

    async def take(self, owner: str) -> StreamSlot:
        """The owner's slot for one more stream, or TooManyStreams (429)."""
        limit = self.limit
        held = self._open.get(owner, 0)
        if held >= limit:
            raise TooManyStreams(limit)  # this process alone already holds them all
        member = ""
        if self._slots is not None:
            member = secrets.token_hex(8)
            if await self._slots.take({_key(owner): limit}, member, self._ttl) > 0:
                raise TooManyStreams(limit)
            self._held[member] = owner
            if self._renewer is None:
                self._renewer = asyncio.create_task(self._renew(), name="stream-slot-leases")
        self._open[owner] = self._open.get(owner, 0) + 1
        return StreamSlot(self, owner, member)

    @property
    def _ttl(self) -> float:
        return 3 * self.lease_seconds

    def _give_back(self, owner: str, member: str) -> None:
        left = self._open[owner] - 1
        if left:
            self._open[owner] = left
        else:
            del self._open[owner]
        if self._slots is not None and self._held.pop(member, None) is not None:
            keep(self._tasks, self._slots.release([_key(owner)], member), "stream-slot-release")

    async def _renew(self) -> None:
        """Every lease, each held slot lives three more; ends when none is held."""
        assert self._slots is not None
        try:
            while self._held:
                await asyncio.sleep(self.lease_seconds)
                for member, owner in list(self._held.items()):
                    await self._slots.renew([_key(owner)], member, self._ttl)
        finally:
            self._renewer = None

    async def close(self) -> None:
        """Give back what is held (shutdown); a slot not given back expires by itself."""
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
        if self._slots is not None:
            for member, owner in list(self._held.items()):
                await self._slots.release([_key(owner)], member)
        self._held.clear()
        if self._tasks:
            await asyncio.wait(list(self._tasks))


class StreamSlot:
    """One owner's right to one open stream; :meth:`release` is idempotent."""

    __slots__ = ("_member", "_slots", "owner")

    def __init__(self, slots: StreamCap, owner: str, member: str) -> None:
        self._slots: StreamCap | None = slots
        self.owner = owner
        self._member = member

    def release(self) -> None:
        slots, self._slots = self._slots, None
        if slots is not None:
            slots._give_back(self.owner, self._member)


def _key(owner: str) -> str:
    return f"streams:{owner}"
