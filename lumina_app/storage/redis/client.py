"""Redis clients as Lumina uses them: short timeouts and no hidden retries."""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff


def create_redis_client(url: str, *, socket_timeout: float | None) -> aioredis.Redis:
    """A client with short timeouts and no hidden retries (the window does its own).
    ``socket_timeout=None`` is for blocking readers (pub/sub)."""
    return aioredis.Redis.from_url(
        url,
        socket_timeout=socket_timeout,
        socket_connect_timeout=socket_timeout or 5.0,
        retry=Retry(NoBackoff(), 0),
        retry_on_timeout=False,
        health_check_interval=0,
        decode_responses=False,
    )
