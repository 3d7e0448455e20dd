"""Sign-in attempts, limited per client address and per username (a moving window of one
minute each): guessing one account's password from many addresses is as slow as guessing
anyone's from one.

An attempt is counted before its password is checked, atomically for both windows (so a
burst of concurrent attempts cannot all pass the check before the first is counted), and
given back if it succeeds. A refused attempt is not counted and not checked, so it costs
the server nothing.

The counts are ``Slots`` (``storage/slots.py``): with Redis configured they live there,
shared by every worker process and instance (else each worker would give an attacker its
own allowance); otherwise, and while Redis is unreachable, in this process — still
limited, never an open door and never a failed sign-in because Redis is down.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

from lumina_app.domain import TooManyAttempts
from lumina_app.storage.slots import Slots

WINDOW_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Attempt:
    """One counted attempt: what a success gives back."""

    member: str
    address_key: str
    user_key: str | None


class SignInLimits:
    def __init__(self, slots: Slots, *, per_address: int, per_user: int) -> None:
        self.slots = slots
        self.per_address = per_address
        self.per_user = per_user

    async def attempt(self, address: str, username: str | None = None) -> Attempt:
        """Count an attempt, or TooManyAttempts (429, with the wait) when either window is
        full (then nothing is counted)."""
        attempt = Attempt(
            member=secrets.token_hex(8),
            address_key=f"signin:address:{address}",
            user_key=f"signin:user:{username}" if username is not None else None,
        )
        limits = {attempt.address_key: self.per_address}
        if attempt.user_key is not None:
            limits[attempt.user_key] = self.per_user
        wait = await self.slots.take(limits, attempt.member, WINDOW_SECONDS)
        if wait > 0:
            seconds = max(1, math.ceil(min(wait, WINDOW_SECONDS)))
            raise TooManyAttempts(f"too many failed sign-ins: try again in {seconds} s", seconds)
        return attempt

    async def forget(self, username: str) -> None:
        """The account's own count gone (a deleted account leaves no key behind)."""
        await self.slots.clear(f"signin:user:{username}")

    async def succeeded(self, attempt: Attempt) -> None:
        """The attempt is given back, and the account's own count starts again (not the
        address's: one valid account must not buy more guesses at another)."""
        await self.slots.release([attempt.address_key], attempt.member)
        if attempt.user_key is not None:
            await self.slots.clear(attempt.user_key)
