"""Run event buffers: every event of a run, replayable from any id while the run lives and
for a bounded time after it ends (so a client that reconnects with Last-Event-ID misses
nothing). In process (``local.run_events``) or shared through Redis Streams
(``redis.run_events``), behind this one contract."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from lumina_app.domain import RunEvent


class RunEventLog(Protocol):
    # Whether other instances read these events (then a run running elsewhere may be
    # followed before its first events arrive: see ``subscribe``).
    shared: bool

    async def publish(self, run_id: str, event: RunEvent) -> None: ...

    async def finish(self, run_id: str) -> None:
        """No more events; keep what is there for the retention time."""

    async def known(self, run_id: str) -> bool: ...

    def subscribe(self, run_id: str, after: int = 0) -> AsyncIterator[RunEvent | None]:
        """Events with id > ``after``: the missed ones first, then live, until the last.
        ``None`` whenever the :data:`HEARTBEAT` of the reading task says a keepalive is due.
        A shared log waits a while for a run whose events have not appeared yet."""

    async def delete(self, run_id: str) -> None: ...

    async def close(self) -> None: ...
