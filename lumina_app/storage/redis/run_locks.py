"""The one-active-run rule across instances: ``SET <prefix>:{conv}:lock <runId> NX PX
<lease>`` renewed by the run's heartbeat, released with compare-and-delete; stops are
published on a channel every instance listens to. If Redis cannot be reached the
instance falls back to its own in-process lock."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from lumina_app.storage.local.run_locks import LocalRunLocks
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker
from lumina_app.storage.redis.client import RedisUnavailable, through_breaker

log = logging.getLogger(__name__)
T = TypeVar("T")


# Renew; a missing key (taken while Redis was away, or lost with a restart) is re-taken.
# Only another run's value means the lease is lost.
_RENEW = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""
_TAKE_OVER = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class RedisRunLocks:
    shared = True

    def __init__(
        self,
        client: aioredis.Redis,
        listener: aioredis.Redis,
        *,
        prefix: str,
        lease_ms: int,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.client = client
        # Shared with the hot window: when Redis is known to be away, skip it at once
        # instead of waiting out a socket timeout per lock operation.
        self.breaker = breaker or CircuitBreaker(cooldown=2.0)
        self.listener = listener  # pub/sub holds a connection: not the short-timeout one
        self.prefix = prefix
        self.lease_ms = lease_ms
        self.channel = f"{prefix}:stop"
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._take_over = client.register_script(_TAKE_OVER)
        self._fallback = LocalRunLocks()

    def key(self, conversation_uuid: str) -> str:
        return f"{self.prefix}:{{{conversation_uuid}}}:lock"

    async def _redis(self, operation: Callable[[], Awaitable[T]]) -> T:
        return await through_breaker(self.breaker, operation)

    async def acquire(self, conversation_uuid: str, run_id: str) -> str | None:
        local = await self._fallback.acquire(conversation_uuid, run_id)
        if local is not None:
            return local
        try:
            key = self.key(conversation_uuid)
            taken = await self._redis(
                lambda: self.client.set(key, run_id, nx=True, px=self.lease_ms)
            )
            if taken:
                return None
            holder = await self._redis(lambda: self.client.get(key))
        except (RedisError, OSError) as exc:
            if not isinstance(exc, RedisUnavailable):  # the breaker already said so once
                log.warning("run lock in redis unavailable, using the in-process lock: %s", exc)
            return None
        if holder is None:  # released between SET and GET: try once more
            return await self.acquire(conversation_uuid, run_id)
        await self._fallback.release(conversation_uuid, run_id)
        return holder.decode() if isinstance(holder, bytes) else holder

    async def renew(self, conversation_uuid: str, run_id: str) -> bool:
        try:
            keys = [self.key(conversation_uuid)]
            kept = await self._redis(lambda: self._renew(keys=keys, args=[run_id, self.lease_ms]))
        except (RedisError, OSError):
            return True  # cannot tell: keep going, SQL fencing still guards the writes
        return bool(kept)

    async def release(self, conversation_uuid: str, run_id: str) -> None:
        await self._fallback.release(conversation_uuid, run_id)
        try:
            keys = [self.key(conversation_uuid)]
            await self._redis(lambda: self._release(keys=keys, args=[run_id]))
        except (RedisError, OSError) as exc:
            if not isinstance(exc, RedisUnavailable):
                log.warning("run lock not released (its lease will expire): %s", exc)

    async def take_over(self, conversation_uuid: str, stale_run_id: str, run_id: str) -> bool:
        try:
            keys = [self.key(conversation_uuid)]
            taken = await self._redis(
                lambda: self._take_over(keys=keys, args=[stale_run_id, run_id, self.lease_ms])
            )
        except (RedisError, OSError):
            return False
        if taken:
            await self._fallback.acquire(conversation_uuid, run_id)
        return bool(taken)

    async def holder(self, conversation_uuid: str) -> str | None:
        key = self.key(conversation_uuid)
        value = await self._redis(lambda: self.client.get(key))
        return value.decode() if isinstance(value, bytes) else value

    async def request_stop(self, run_id: str) -> None:
        await self.client.publish(self.channel, run_id)

    async def listen_for_stops(self, on_stop: Callable[[str], None]) -> None:
        while True:
            try:
                async with self.listener.pubsub() as pubsub:
                    await pubsub.subscribe(self.channel)
                    async for message in _messages(pubsub):
                        on_stop(message)
            except (RedisError, OSError) as exc:
                log.warning("stop listener lost redis, retrying: %s", exc)
                await asyncio.sleep(1.0)

    async def close(self) -> None:
        await self.listener.aclose()


async def _messages(pubsub: aioredis.client.PubSub) -> AsyncIterator[str]:
    async for message in pubsub.listen():
        if message.get("type") == "message":
            data = message["data"]
            yield data.decode() if isinstance(data, bytes) else data
