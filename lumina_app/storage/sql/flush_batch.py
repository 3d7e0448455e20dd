"""Group commit for the text of answers still being generated.

Every live run flushes its growing answer every few hundred ms (``AnswerFlusher``); with
a hundred streams that was 400 transactions a second, each paying a commit. Flushes that
arrive within ``window`` seconds of each other go out together in one transaction
instead. Only intermediate flushes are batched: they are for crash recovery, a few ms of
delay costs nothing, and each still gets its own fenced result. The final write of an
answer is never batched, and it does not wait for a flush of the same answer still in the
window: that flush is withdrawn (:meth:`FlushBatch.withdraw`), the final write stores
everything it held.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from lumina_app.domain import utcnow

Transact = Callable[[Sequence[dict[str, Any]]], Awaitable[list[bool]]]


class FlushBatch:
    def __init__(self, transact: Transact, *, window: float) -> None:
        self._transact = transact
        self.window = window
        self._pending: dict[int, tuple[dict[str, Any], list[asyncio.Future]]] = {}
        self._task: asyncio.Task | None = None

    async def write(self, message_id: int, content: str) -> bool:
        """Store ``content`` as the answer's text; True once committed, False if the
        answer was already closed. A newer flush of the same answer replaces an older
        one still waiting (both callers get the outcome of the newer)."""
        future = asyncio.get_running_loop().create_future()
        flush = {"_mid": message_id, "content": content, "updated_at": utcnow()}
        waiting = self._pending.get(message_id)
        self._pending[message_id] = (flush, (waiting[1] if waiting else []) + [future])
        if self._task is None:
            self._task = asyncio.create_task(self._commit_soon(), name="answer-flush-batch")
        return await future

    def withdraw(self, message_id: int) -> None:
        """The answer's final write is about to store all of it: its flush still waiting
        here is dropped (its callers get True, as for a commit: the text is about to be
        stored), so the final write does not wait out the window. A flush already being
        committed is not touched; the caller waits for it as before."""
        waiting = self._pending.pop(message_id, None)
        for future in waiting[1] if waiting else ():
            if not future.done():
                future.set_result(True)

    async def _commit_soon(self) -> None:
        await asyncio.sleep(self.window)
        batch, self._pending, self._task = self._pending, {}, None
        if not batch:  # every flush of the window was withdrawn
            return
        flushes = [flush for flush, _ in batch.values()]
        try:
            results = await self._transact(flushes)
        except BaseException as exc:  # every waiter gets the failure (StoreUnavailable…)
            for _, futures in batch.values():
                for future in futures:
                    if future.done():
                        continue
                    if isinstance(exc, Exception):
                        future.set_exception(exc)
                    else:  # cancelled (shutdown): so are the waiters
                        future.cancel()
            if not isinstance(exc, Exception):
                raise
            return
        for (_, futures), written in zip(batch.values(), results, strict=True):
            for future in futures:
                if not future.done():
                    future.set_result(written)
