"""Persists a growing answer off the event path: at most one UPDATE in flight, triggered
when ``chars`` characters have accumulated or ``interval`` seconds have passed — but never
more often than every ``interval / 5`` (a fast stream would otherwise rewrite the whole
answer back to back)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from lumina_app.domain import StoreUnavailable

log = logging.getLogger(__name__)


class AnswerFlusher:
    def __init__(
        self,
        write: Callable[[str], Awaitable[None]],
        *,
        interval: float,
        chars: int,
        withdraw: Callable[[], None] | None = None,
    ) -> None:
        self._write = write
        self._withdraw = withdraw
        self.interval = interval
        self.chars = chars
        self._joined = ""
        self._parts: list[str] = []
        self._pending = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._closing = False
        self._stopping = asyncio.Event()
        self.flushes = 0

    @property
    def text(self) -> str:
        if self._parts:  # join only what arrived since the last look
            self._joined += "".join(self._parts)
            self._parts.clear()
        return self._joined

    def add(self, text: str) -> None:
        self._parts.append(text)
        self._pending += len(text)
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="answer-flusher")
        if self._pending >= self.chars:
            self._wake.set()

    async def _loop(self) -> None:
        while not self._closing:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.interval):
                    await self._wake.wait()
            self._wake.clear()
            if self._pending and not self._closing:
                self._pending = 0
                try:
                    await self._write(self.text)
                    self.flushes += 1
                except StoreUnavailable as exc:
                    # The final write retries; a missed intermediate flush loses nothing.
                    log.warning("answer flush skipped: %s", exc)
                with contextlib.suppress(TimeoutError):  # the rate cap; close() cuts it short
                    async with asyncio.timeout(self.interval / 5):
                        await self._stopping.wait()

    async def close(self) -> None:
        """Stop flushing, letting an UPDATE in flight finish (cancelling one mid-statement
        would poison its connection); the caller writes the final text itself, so a flush
        not sent yet (waiting for a group commit) is withdrawn rather than waited for."""
        if self._task is not None:
            self._closing = True
            self._wake.set()
            self._stopping.set()
            if self._withdraw is not None:
                self._withdraw()
            await self._task
            self._task = None
