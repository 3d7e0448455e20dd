"""Redis clients as Lumina uses them: short timeouts and no hidden retries."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from lumina_app.storage.redis.circuit_breaker import CircuitBreaker

T = TypeVar("T")


class RedisUnavailable(RedisError):
    """Skipped: the circuit breaker says Redis is away."""


async def through_breaker(breaker: CircuitBreaker, operation: Callable[[], Awaitable[T]]) -> T:
    """``operation`` unless the breaker is open (then RedisUnavailable at once); its
    outcome tells the breaker."""
    if not breaker.allow():
        raise RedisUnavailable("redis circuit open")
    try:
        result = await operation()
    except (RedisError, OSError):
        breaker.record_failure()
        raise
    breaker.record_success()
    return result


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
