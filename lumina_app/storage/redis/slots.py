"""Expiring slots shared by every process through Redis (``storage/slots.py``): one sorted
set per key, member → expiry in ms on Redis's clock; taken for all keys at once or for
none, by one script. While Redis is unreachable (or its circuit breaker is open) slots are
taken in this process, never refused and never granted freely because Redis is away."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeVar

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from lumina_app.storage.local.slots import LocalSlots
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker
from lumina_app.storage.redis.client import RedisUnavailable, through_breaker

log = logging.getLogger(__name__)
T = TypeVar("T")

_MAX_TTL_MS = 24 * 3600 * 1000

# KEYS: the keys; ARGV: member, ttl ms, then each key's limit. Returns 0 (taken) or the ms
# until a member of a full key expires.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local wait = 0
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZCARD', key) >= tonumber(ARGV[2 + i]) then
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    local left = ttl
    if first[2] then left = tonumber(first[2]) - now end
    if left > wait then wait = left end
  end
end
if wait > 0 then return wait end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now + ttl, ARGV[1])
  redis.call('PEXPIRE', key, ttl)
end
return 0
"""
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', key, ARGV[2])
end
return 1
"""


class RedisSlots:
    shared = True

    def __init__(
        self, client: aioredis.Redis, *, prefix: str, breaker: CircuitBreaker | None = None
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.breaker = breaker or CircuitBreaker(cooldown=2.0)
        self._take = client.register_script(_TAKE)
        self._renew = client.register_script(_RENEW)
        self._fallback = LocalSlots()

    def key(self, key: str) -> str:
        return f"{self.prefix}:slots:{key}"

    async def take(self, limits: Mapping[str, int], member: str, ttl: float) -> float:
        keys = [self.key(k) for k in limits]
        args = [member, _ms(ttl), *limits.values()]
        try:
            wait_ms = await self._redis(lambda: self._take(keys=keys, args=args))
        except (RedisError, OSError) as exc:
            self._warn("counting in this process", exc)
            return await self._fallback.take(limits, member, ttl)
        return int(wait_ms) / 1000

    async def renew(self, keys: Iterable[str], member: str, ttl: float) -> None:
        keys = list(keys)
        if self._fallback.holds(member):
            await self._fallback.renew(keys, member, ttl)
            return
        names = [self.key(k) for k in keys]
        try:
            await self._redis(lambda: self._renew(keys=names, args=[member, _ms(ttl)]))
        except (RedisError, OSError) as exc:
            self._warn("not renewed (it expires unless renewed later)", exc)

    async def release(self, keys: Iterable[str], member: str) -> None:
        keys = list(keys)
        if self._fallback.holds(member):
            await self._fallback.release(keys, member)
            return
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.zrem(self.key(key), member)
                await self._redis(pipe.execute)
        except (RedisError, OSError) as exc:
            self._warn("not released (it expires by itself)", exc)

    async def clear(self, key: str) -> None:
        await self._fallback.clear(key)
        try:
            await self._redis(lambda: self.client.delete(self.key(key)))
        except (RedisError, OSError) as exc:
            self._warn("not cleared (it expires by itself)", exc)

    async def close(self) -> None:
        await self.client.aclose()

    async def _redis(self, operation: Callable[[], Awaitable[T]]) -> T:
        return await through_breaker(self.breaker, operation)

    @staticmethod
    def _warn(what: str, exc: BaseException) -> None:
        if not isinstance(exc, RedisUnavailable):  # the breaker already said so once
            log.warning("slots: Redis unavailable, %s: %s", what, exc)


def _ms(seconds: float) -> int:
    return max(1, min(_MAX_TTL_MS, int(seconds * 1000)))
