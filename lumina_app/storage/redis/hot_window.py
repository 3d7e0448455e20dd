"""Hot window in Redis: a list of JSON messages + a high-water key, one round trip per call."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import orjson
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from lumina_app.domain import Msg, Summary
from lumina_app.storage.hot_window import HotWindowUnavailable, Window
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker

log = logging.getLogger(__name__)
T = TypeVar("T")

# KEYS: list, high-water, summary. ARGV: first seq, window size, ttl, messages...
_APPEND_LUA = """
local hw = redis.call('GET', KEYS[2])
if not hw then return -1 end
hw = tonumber(hw)
local first = tonumber(ARGV[1])
local last = first + #ARGV - 4
if first > hw + 1 then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  return -2
end
if last <= hw then return 0 end
-- rows at or below the mark are there already (a rebuild ran in between): the rest follow
for i = 4 + math.max(0, hw + 1 - first), #ARGV do redis.call('RPUSH', KEYS[1], ARGV[i]) end
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('SET', KEYS[2], last, 'EX', ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[3])
return 1
"""
# KEYS: list, high-water, summary. ARGV: high-water, ttl, summary, messages... What a
# MULTI/EXEC of the same commands did, atomically too, in one reply: redis-py parsed the
# transaction's seven replies in Python, a third of a new conversation's first turn.
_REPLACE_LUA = """
redis.call('DEL', KEYS[1])
if #ARGV > 3 then
  redis.call('RPUSH', KEYS[1], unpack(ARGV, 4))
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[2])
redis.call('SET', KEYS[3], ARGV[3], 'EX', ARGV[2])
return 1
"""


def _encode(msg: Msg) -> bytes:
    return orjson.dumps(msg.to_hot())


_NO_SUMMARY = b"-"


def _encode_summary(summary: Summary | None) -> bytes:
    return _NO_SUMMARY if summary is None else orjson.dumps(summary.to_hot())


def _summary(raw: bytes) -> Summary | None:
    return None if raw == _NO_SUMMARY else Summary.from_hot(orjson.loads(raw))


class RedisHotWindow:
    """Redis tier. Connection errors get one retry; any failure opens the breaker."""

    name = "redis"

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        prefix: str,
        window: int,
        ttl_seconds: int,
        breaker: CircuitBreaker,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.window = window
        self.ttl = ttl_seconds
        self.breaker = breaker
        self._append = client.register_script(_APPEND_LUA)
        self._replace = client.register_script(_REPLACE_LUA)

    def keys(self, conversation_uuid: str) -> tuple[str, str, str]:
        """The window list, its high-water mark and its summary slot (one hash slot)."""
        base = f"{self.prefix}:{{{conversation_uuid}}}"
        return f"{base}:win", f"{base}:hw", f"{base}:sum"

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        if not self.breaker.allow():
            raise HotWindowUnavailable("redis circuit open")
        for attempt in (1, 2):
            try:
                result = await operation()
            except RedisConnectionError as exc:
                # A dropped pooled connection deserves one more try; a hung server (a
                # timeout, which is not a ConnectionError) does not.
                if attempt == 1:
                    continue
                self._fail(exc)
            except (RedisError, OSError) as exc:
                self._fail(exc)
            else:
                self.breaker.record_success()
                return result
        raise AssertionError("unreachable")

    def _fail(self, exc: BaseException) -> None:
        was_open = self.breaker.is_open
        self.breaker.record_failure()
        if not was_open:
            log.warning("redis hot window unavailable, serving from SQL: %s", exc)
        raise HotWindowUnavailable(str(exc)) from exc

    async def read(self, conversation_uuid: str) -> Window | None:
        win_key, hw_key, sum_key = self.keys(conversation_uuid)

        async def op() -> list:
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.lrange(win_key, 0, -1)
                pipe.get(hw_key)
                pipe.get(sum_key)
                return await pipe.execute()

        items, high_water, summary = await self._call(op)
        if high_water is None or summary is None:
            return None  # no window, or one without its summary slot: not whole
        # orjson: decoding is a third of a hot read's cost with the json module.
        return Window(
            [Msg.from_hot(orjson.loads(item)) for item in items],
            int(high_water),
            _summary(summary),
        )

    async def append(self, conversation_uuid: str, msgs: Sequence[Msg]) -> bool:
        if not msgs:
            return True
        args = [msgs[0].seq, self.window, self.ttl, *(_encode(m) for m in msgs)]
        keys = list(self.keys(conversation_uuid))
        outcome = await self._call(lambda: self._append(keys=keys, args=args))
        # -1: no window, -2: a gap (window dropped), 0: all at or below the mark (out of order)
        return int(outcome) > 0

    async def replace(
        self,
        conversation_uuid: str,
        msgs: Sequence[Msg],
        high_water: int,
        summary: Summary | None = None,
    ) -> None:
        kept = list(msgs)[-self.window :]
        args = [high_water, self.ttl, _encode_summary(summary), *(_encode(m) for m in kept)]
        keys = list(self.keys(conversation_uuid))
        await self._call(lambda: self._replace(keys=keys, args=args))

    async def set_summary(self, conversation_uuid: str, summary: Summary) -> None:
        *_window_keys, sum_key = self.keys(conversation_uuid)
        # Only beside a window (XX: a slot that exists): a lone summary is never a window.
        await self._call(
            lambda: self.client.set(sum_key, _encode_summary(summary), ex=self.ttl, xx=True)
        )

    async def delete(self, conversation_uuid: str) -> None:
        await self._call(lambda: self.client.delete(*self.keys(conversation_uuid)))

    async def status(self) -> str:
        try:
            await self._call(self.client.ping)
        except HotWindowUnavailable:
            return "degraded"
        return "ok"

    async def close(self) -> None:
        await self.client.aclose()
