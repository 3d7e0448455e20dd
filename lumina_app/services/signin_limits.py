"""Failed sign-ins, limited per client address and per username (a moving window of one
minute each, ``limits`` in process memory): guessing one account's password from many
addresses is as slow as guessing anyone's from one. A refused attempt is not counted and
not checked, so it costs the server nothing."""

from __future__ import annotations

import time

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import MovingWindowRateLimiter

from lumina_app.domain import TooManyAttempts


class SignInLimits:
    def __init__(self, *, per_address: int, per_user: int) -> None:
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._address = parse(f"{per_address}/minute")
        self._user = parse(f"{per_user}/minute")

    def _windows(self, address: str, username: str | None) -> list[tuple[RateLimitItem, str]]:
        windows = [(self._address, f"address:{address}")]
        if username is not None:
            windows.append((self._user, f"user:{username}"))
        return windows

    async def check(self, address: str, username: str | None = None) -> None:
        """TooManyAttempts (429, with the wait) once either window is full."""
        wait = 0
        for item, key in self._windows(address, username):
            if not await self._limiter.test(item, key):
                reset, _remaining = await self._limiter.get_window_stats(item, key)
                wait = max(wait, int(reset - time.time()) + 1, 1)
        if wait:
            raise TooManyAttempts(f"too many failed sign-ins: try again in {wait} s", wait)

    async def failed(self, address: str, username: str | None = None) -> None:
        for item, key in self._windows(address, username):
            await self._limiter.hit(item, key)

    async def succeeded(self, username: str) -> None:
        """The account's own count starts again (the address's does not: one valid account
        must not buy more guesses at another)."""
        await self._limiter.clear(self._user, f"user:{username}")
