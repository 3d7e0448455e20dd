"""The live archive mirror (LUMINA_ARCHIVE_MIRROR): every turn that ends is written to the
archive by one background task, off the run's path.

A run only records "conversation X, turns T are final" (no I/O). The worker coalesces
what piled up per conversation, re-reads it from SQL and writes meta.json, history.json
and the new turns' messages.log. A failed write is logged as a warning and retried with
exponential backoff; it never reaches the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from lumina_app.archive.service import ArchiveService
from lumina_app.domain import ConversationInfo, ConversationNotFound, Msg

log = logging.getLogger(__name__)


class ArchiveMirror:
    def __init__(
        self, archive: ArchiveService, *, retry_initial: float = 0.5, retry_max: float = 60.0
    ) -> None:
        self.archive = archive
        self.retry_initial = retry_initial
        self.retry_max = retry_max
        self._pending: dict[str, set[str]] = {}  # conversation uuid -> turn ids to log
        self._due: dict[str, float] = {}  # conversation uuid -> loop time of next attempt
        self._failures: dict[str, int] = {}
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task | None = None
        self.failed = 0

    async def on_final(self, conversation: ConversationInfo, msgs: Sequence[Msg]) -> None:
        """Queue the turns; returns at once."""
        self._queue(conversation.uuid, [m.turn_id for m in msgs])

    async def on_rows_removed(self, conversation: ConversationInfo, turns: Sequence[str]) -> None:
        """Some messages were deleted: rewrite the files, those turns' logs too (a turn
        left with no message loses its log)."""
        self._queue(conversation.uuid, turns)

    def _queue(self, uuid: str, turns: Sequence[str]) -> None:
        self._pending.setdefault(uuid, set()).update(turns)
        self._due.setdefault(uuid, 0.0)  # a retry keeps its backoff
        self._idle.clear()
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="archive-mirror")

    async def on_delete(self, conversation: ConversationInfo) -> None:
        self._drop(conversation.uuid)

    async def drain(self, within: float = 10.0) -> bool:
        """Wait until nothing is queued (retries included); False if that takes longer."""
        try:
            await asyncio.wait_for(self._idle.wait(), within)
        except TimeoutError:
            return False
        return True

    async def close(self, grace: float = 5.0) -> None:
        """Give queued writes a moment to land, then stop the worker."""
        if self._task is None:
            return
        if not await self.drain(grace):
            log.warning("archive mirror: %d conversation(s) not written", len(self._pending))
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    # -- the worker ----------------------------------------------------------------------

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._wake.clear()
            if not self._pending:
                self._idle.set()
                await self._wake.wait()
                continue
            now = loop.time()
            ready = [uuid for uuid, due in self._due.items() if due <= now]
            if not ready:
                wait = min(self._due.values()) - now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)
                continue
            for uuid in ready:
                await self._write(uuid, loop.time())

    async def _write(self, uuid: str, now: float) -> None:
        turns = self._pending.pop(uuid, set())
        self._due.pop(uuid, None)
        try:
            await self.archive.write_turns(uuid, turns)
        except ConversationNotFound:
            self._failures.pop(uuid, None)  # deleted meanwhile: nothing to mirror
        except Exception as exc:
            self.failed += 1
            failures = self._failures[uuid] = self._failures.get(uuid, 0) + 1
            delay = min(self.retry_max, self.retry_initial * 2 ** (failures - 1))
            log.warning(
                "archive mirror: writing conversation %s failed (attempt %d), retry in %.1fs: %s",
                uuid,
                failures,
                delay,
                exc,
            )
            self._pending.setdefault(uuid, set()).update(turns)
            self._due[uuid] = now + delay
        else:
            self._failures.pop(uuid, None)

    def _drop(self, uuid: str) -> None:
        self._pending.pop(uuid, None)
        self._due.pop(uuid, None)
        self._failures.pop(uuid, None)
        self._wake.set()  # the worker notices the queue may be empty and reports idle
