"""Live notices through one Redis Pub/Sub channel that every instance listens to: one
publish per notice, one listening connection per process whatever the number of pages."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from lumina_app.storage.live_bus import Deliver
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker
from lumina_app.storage.redis.client import RedisUnavailable, through_breaker

log = logging.getLogger(__name__)
_RETRY_SECONDS = 1.0


class RedisLiveBus:
    def __init__(
        self,
        client: aioredis.Redis,
        listener: aioredis.Redis,
        *,
        prefix: str,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.client = client
        self.listener = listener  # its own connection: a subscribed one can do nothing else
        self.channel = f"{prefix}:live"
        # Shared with the hot window: while Redis is known to be away a notice is dropped
        # at once, not after a socket timeout that holds a pooled connection (two per run).
        self.breaker = breaker or CircuitBreaker(cooldown=2.0)

    async def publish(self, owner: str, notice: dict[str, Any]) -> None:
        data = json.dumps({"owner": owner, **notice})
        try:
            await through_breaker(self.breaker, lambda: self.client.publish(self.channel, data))
        except (RedisError, OSError) as exc:
            if not isinstance(exc, RedisUnavailable):  # the breaker already said so once
                log.warning("live notice not sent (pages follow on their next load): %s", exc)

    async def listen(self, deliver: Deliver) -> None:
        while True:
            try:
                async with self.listener.pubsub() as pubsub:
                    await pubsub.subscribe(self.channel)
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            _deliver(deliver, message["data"])
            except (RedisError, OSError) as exc:
                log.warning("live listener lost redis, retrying: %s", exc)
            await asyncio.sleep(_RETRY_SECONDS)


def _deliver(deliver: Deliver, data: bytes | str) -> None:
    try:
        notice = json.loads(data)
        owner = notice.pop("owner")
    except (ValueError, KeyError, AttributeError):
        log.warning("live notice ignored: not a notice")
        return
    if isinstance(owner, str):
        deliver(owner, notice)
