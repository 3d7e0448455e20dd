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


def create_redis_client(
    url: str,
    *,
    socket_timeout: float | None,
    max_connections: int = 64,
    pool_timeout: float = 2.0,
    name: str | None = None,
) -> aioredis.Redis:
    """A client with short timeouts and no hidden retries (the window does its own).
    ``socket_timeout=None`` is for blocking readers (pub/sub).

    Its pool opens at most ``max_connections``; a command that finds them all busy waits
    up to ``pool_timeout`` seconds for one to come back, then fails as Redis being away
    (``ConnectionError``), so a wave of slow clients raises no step in open sockets
    that a ``ConnectionPool`` would keep for good (it grows to the peak and never shrinks).
    ``name`` is what ``CLIENT LIST`` shows for its connections."""
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=pool_timeout,
        socket_timeout=socket_timeout,
        socket_connect_timeout=socket_timeout or 5.0,
        retry=Retry(NoBackoff(), 0),
        retry_on_timeout=False,
        health_check_interval=0,
        decode_responses=False,
        client_name=name,
    )
    return aioredis.Redis.from_pool(pool)
