"""Failed sign-ins, limited per client address and per username (a moving window of one
minute each, ``limits``): guessing one account's password from many addresses is as slow
as guessing anyone's from one. A refused attempt is not counted and not checked, so it
costs the server nothing.

With Redis configured the counts live there, shared by every worker process and instance
(else each worker would give an attacker its own allowance); otherwise, and while Redis
is unreachable, in this process's memory — still limited, per process, never an open door
and never a failed sign-in because Redis is down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage
from limits.aio.strategies import MovingWindowRateLimiter
from limits.errors import StorageError

from lumina_app.domain import TooManyAttempts

log = logging.getLogger(__name__)
T = TypeVar("T")


class SignInLimits:
    def __init__(
        self,
        *,
        per_address: int,
        per_user: int,
        redis_url: str | None = None,
        prefix: str = "lumina",
        socket_timeout: float = 2.0,
    ) -> None:
        self._local = MovingWindowRateLimiter(MemoryStorage())
        self._shared = None
        if redis_url:
            storage = RedisStorage(
                "async+" + redis_url,
                implementation="redispy",
                key_prefix=f"{prefix}:signin",
                wrap_exceptions=True,
                socket_timeout=socket_timeout,
                socket_connect_timeout=socket_timeout,
            )
            self._shared = MovingWindowRateLimiter(storage)
        self._address = parse(f"{per_address}/minute")
        self._user = parse(f"{per_user}/minute")

    def _windows(self, address: str, username: str | None) -> list[tuple[RateLimitItem, str]]:
        windows = [(self._address, f"address:{address}")]
        if username is not None:
            windows.append((self._user, f"user:{username}"))
        return windows

    async def _on(self, call: Callable[[MovingWindowRateLimiter], Awaitable[T]]) -> T:
        """``call`` on the shared counts; on this process's own while Redis fails."""
        if self._shared is not None:
            try:
                return await call(self._shared)
            except StorageError as exc:
                log.warning("sign-in limits: Redis unavailable, counting in process: %s", exc)
        return await call(self._local)

    async def check(self, address: str, username: str | None = None) -> None:
        """TooManyAttempts (429, with the wait) once either window is full."""
        wait = 0
        for item, key in self._windows(address, username):
            if not await self._on(lambda limiter, i=item, k=key: limiter.test(i, k)):
                reset, _remaining = await self._on(
                    lambda limiter, i=item, k=key: limiter.get_window_stats(i, k)
                )
                wait = max(wait, int(reset - time.time()) + 1, 1)
        if wait:
            raise TooManyAttempts(f"too many failed sign-ins: try again in {wait} s", wait)

    async def failed(self, address: str, username: str | None = None) -> None:
        for item, key in self._windows(address, username):
            await self._on(lambda limiter, i=item, k=key: limiter.hit(i, k))

    async def succeeded(self, username: str) -> None:
        """The account's own count starts again (the address's does not: one valid account
        must not buy more guesses at another)."""
        await self._on(lambda limiter: limiter.clear(self._user, f"user:{username}"))
