"""Who may run a conversation now, and how a stop reaches the process running it.

In process: a dict. With Redis: ``SET <prefix>:{conv}:lock <runId> NX PX <lease>`` renewed
by the run's heartbeat, released with compare-and-delete, so the one-active-run rule holds
across instances; a killed instance's lease simply runs out. Stops are published on a
channel every instance listens to. If Redis cannot be reached the instance falls back to
its own in-process lock (it is then only as strong as a single instance).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class RunLocks(Protocol):
    shared: bool  # True when other instances see the same locks

    async def acquire(self, conversation_uuid: str, run_id: str) -> str | None:
        """Take the conversation for ``run_id``; returns the holder's run id if busy."""

    async def renew(self, conversation_uuid: str, run_id: str) -> bool:
        """Extend the lease; False means the lock is no longer ours (fenced off)."""

    async def release(self, conversation_uuid: str, run_id: str) -> None: ...

    async def take_over(self, conversation_uuid: str, stale_run_id: str, run_id: str) -> bool:
        """Replace a lock left by a run that has already ended (its release was lost)."""

    async def holder(self, conversation_uuid: str) -> str | None: ...

    async def request_stop(self, run_id: str) -> None:
        """Ask whichever process runs ``run_id`` to stop it."""

    async def listen_for_stops(self, on_stop: Callable[[str], None]) -> None:
        """Run until cancelled, calling ``on_stop(run_id)`` for each request."""

    async def close(self) -> None: ...
