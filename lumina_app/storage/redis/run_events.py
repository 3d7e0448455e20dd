"""Run event buffers shared through Redis Streams, so a client can resume a stream on any
instance. Events are kept in process for local followers (no Redis on the token path)
and copied to ``<prefix>:run:{id}`` in batches — one pipelined round trip per batch — by a
background writer. A stream entry's id is ``<event id>-0``, so ``XREAD`` from
``<Last-Event-ID>-0`` is exactly "what was missed"."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
from collections.abc import AsyncIterator

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from lumina_app.domain import EventType, RunEvent
from lumina_app.domain.heartbeat import HEARTBEAT, Heartbeat
from lumina_app.storage.local.run_events import LocalRunEventLog
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker
from lumina_app.storage.redis.client import RedisUnavailable, through_breaker

log = logging.getLogger(__name__)
_LIVE_TTL = 24 * 3600  # a run that never finishes still disappears eventually
_BATCH = 1000
_RETRY_EVERY = 0.1  # seconds between tries while Redis is away
_RETRY_FOR = 10.0  # a batch still refused after this long is dropped (memory stays bounded)
_DELETE_WAITS = 1.0  # at most this long for a batch on its way when a run's events go


class RedisRunEventLog:
    shared = True

    def __init__(
        self,
        *,
        local: LocalRunEventLog,
        writer: aioredis.Redis,
        reader: aioredis.Redis,
        prefix: str,
        retention: int,
        block_ms: int = 5000,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.local = local
        self.writer = writer
        # The writer's (the hot window's, in the app): while Redis is known to be away a
        # batch is dropped at once instead of waiting out a socket timeout per batch.
        self.breaker = breaker or CircuitBreaker(cooldown=2.0)
        self.reader = reader  # its own connections: XREAD BLOCK outlives the short timeouts
        self.prefix = prefix
        self.retention = retention
        self.block_ms = block_ms
        self._pending: list[tuple[str, RunEvent | None]] = []
        self._closing = False  # shutting down: what Redis refuses now is not tried again
        self._deleted: set[str] = set()  # runs deleted while their copy was being tried
        self._task: asyncio.Task | None = None

    def key(self, run_id: str) -> str:
        return f"{self.prefix}:run:{{{run_id}}}"

    # -- writing -------------------------------------------------------------------

    async def publish(self, run_id: str, event: RunEvent) -> None:
        await self.local.publish(run_id, event)
        self._enqueue(run_id, event)

    async def finish(self, run_id: str) -> None:
        await self.local.finish(run_id)
        self._enqueue(run_id, None)

    def _enqueue(self, run_id: str, event: RunEvent | None) -> None:
        self._pending.append((run_id, event))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain(), name="run-events-to-redis")

    async def _drain(self) -> None:
        failing_since: float | None = None
        while self._pending:
            await asyncio.sleep(0.005 if failing_since is None else _RETRY_EVERY)
            batch, self._pending = self._pending[:_BATCH], self._pending[_BATCH:]
            try:
                await through_breaker(self.breaker, functools.partial(self._copy, batch))
                failing_since = None
            except (RedisError, OSError) as exc:
                if not isinstance(exc, RedisUnavailable):  # the breaker already said so once
                    log.warning("run events not copied to redis yet: %s", exc)
                now = asyncio.get_running_loop().time()
                failing_since = now if failing_since is None else failing_since
                if self._closing or now - failing_since >= _RETRY_FOR:
                    # Local followers are unaffected; only cross-instance resume loses these.
                    # All that waited goes, so a long outage holds at most _RETRY_FOR of them.
                    dropped, self._pending = len(batch) + len(self._pending), []
                    log.warning("run events not copied to redis: %d dropped", dropped)
                    failing_since = None
                else:
                    # A moment's absence delays the copy; it does not lose events. Entry ids
                    # are the events' own, so a batch Redis half-applied is not doubled.
                    kept = [entry for entry in batch if entry[0] not in self._deleted]
                    self._pending = kept + self._pending
        self._deleted.clear()

    async def _copy(self, batch: list[tuple[str, RunEvent | None]]) -> None:
        """One pipelined round trip for the batch."""
        async with self.writer.pipeline(transaction=False) as pipe:
            for run_id, event in batch:
                key = self.key(run_id)
                if event is None:
                    pipe.expire(key, self.retention)
                    continue
                pipe.xadd(key, _fields(event), id=f"{event.id}-0")
                if event.id == 1:
                    pipe.expire(key, _LIVE_TTL)
            await pipe.execute(raise_on_error=False)

    async def flush(self) -> None:
        """Wait until everything published so far is in Redis (tests, shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.wait([self._task])

    # -- reading -------------------------------------------------------------------

    async def known(self, run_id: str) -> bool:
        if await self.local.known(run_id):
            return True
        try:
            return bool(await self.reader.exists(self.key(run_id)))
        except (RedisError, OSError):
            return False

    async def subscribe(self, run_id: str, after: int = 0) -> AsyncIterator[RunEvent | None]:
        if await self.local.known(run_id):
            async for event in self.local.subscribe(run_id, after):
                yield event
            return
        key = self.key(run_id)
        start = after
        if after > 0:
            # Last-Event-ID may be past the run's last event (its own last id, when a client
            # reconnects after the end; or any number up to 20 digits, past what a stream id
            # can be): read from the last event instead, so the run's end is still seen.
            last_event = await self._last_event(key)
            if last_event is None:
                return  # expired or deleted meanwhile
            if last_event.id <= after and last_event.type is EventType.RESULT:
                return  # the run has ended and nothing was missed
            start = min(after, last_event.id)
        heartbeat = HEARTBEAT.get()
        last = f"{start}-0"
        # A run just started elsewhere may be followed before its first batch is copied
        # (its notice can overtake it): a missing stream is only final after a while.
        loop = asyncio.get_running_loop()
        appear_by = loop.time() + self.block_ms / 1000
        while True:
            block = self.block_ms if heartbeat is None else _block_ms(heartbeat, self.block_ms)
            reply = await self.reader.xread({key: last}, count=500, block=block)
            if not reply:
                gone = last != "0-0" or loop.time() >= appear_by
                if gone and not await self.reader.exists(key):
                    return  # expired or deleted: nothing more will come
                if heartbeat is not None and heartbeat.due():
                    yield None
                continue
            for entry_id, fields in reply[0][1]:
                last, event = _entry(entry_id, fields)
                if event.id > after:
                    yield event
                if event.type is EventType.RESULT:
                    return

    async def _last_event(self, key: str) -> RunEvent | None:
        entries = await self.reader.xrevrange(key, count=1)
        if not entries:
            return None
        return _entry(*entries[0])[1]

    async def delete(self, run_id: str) -> None:
        await self.local.delete(run_id)
        self._pending = [entry for entry in self._pending if entry[0] != run_id]
        if self._task is not None and not self._task.done():
            # A batch on its way would re-create the stream: wait for it, but not for its
            # retries while Redis is away (they leave this run's events out from now on).
            self._deleted.add(run_id)
            await asyncio.wait([self._task], timeout=_DELETE_WAITS)
        try:
            await self.writer.delete(self.key(run_id))
        except (RedisError, OSError) as exc:
            log.warning("run events of %s not deleted from redis: %s", run_id, exc)

    async def close(self) -> None:
        self._closing = True
        await self.flush()
        await self.local.close()
        await self.reader.aclose()


def _block_ms(heartbeat: Heartbeat, most: int) -> int:
    """Block no longer than until the next keepalive is due (at least 1 ms: 0 is forever)."""
    left = heartbeat.deadline - asyncio.get_running_loop().time()
    return max(1, min(most, math.ceil(left * 1000)))


def _fields(event: RunEvent) -> dict[str, str]:
    return {"t": event.type.value, "d": json.dumps(event.record(), ensure_ascii=False)}


def _entry(entry_id: bytes | str, fields: dict) -> tuple[str, RunEvent]:
    """A stream entry: its id as text (where to read on from) and the event it holds."""
    entry = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return entry, _event(int(entry.split("-")[0]), fields)


def _event(event_id: int, fields: dict) -> RunEvent:
    text = {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in fields.items()
    }
    return RunEvent.decode(event_id, text["t"], json.loads(text["d"]))
