"""Passwords: Argon2id through pwdlib, run off the event loop, and the rules a new password
must meet.

One Argon2 hash takes ~64 MiB and a quarter of a second of CPU, so at most two run at a
time (a burst of sign-ins queues instead of taking the memory of the machine), each on a
worker thread (the event loop keeps serving streams meanwhile).
"""

from __future__ import annotations

import asyncio
import secrets

from pwdlib import PasswordHash
from pwdlib.exceptions import UnknownHashError

from lumina_app.domain import InvalidInput
from lumina_app.domain.accounts import MAX_PASSWORD_CHARS

_CONCURRENT_HASHES = 2


class Passwords:
    def __init__(self, *, min_length: int) -> None:
        self.min_length = min_length
        self._hasher = PasswordHash.recommended()
        self._gate = asyncio.Semaphore(_CONCURRENT_HASHES)
        self._nobody: str | None = None  # the hash a sign-in for no account is checked against

    async def hash(self, password: str) -> str:
        async with self._gate:
            return await asyncio.to_thread(self._hasher.hash, password)

    async def verify(self, password: str, password_hash: str) -> bool:
        async with self._gate:
            return await asyncio.to_thread(self._check, password, password_hash)

    async def verify_nobody(self, password: str) -> None:
        """The same work as checking a real account's password, for a name that has none:
        how long a sign-in takes does not tell whether the account exists."""
        if self._nobody is None:
            self._nobody = await self.hash(secrets.token_urlsafe(16))
        await self.verify(password, self._nobody)

    def _check(self, password: str, password_hash: str) -> bool:
        try:
            return self._hasher.verify(password, password_hash)
        except UnknownHashError:
            return False

    def check_new(self, password: str, *, username: str) -> None:
        """InvalidInput (422) unless ``password`` may become an account's password."""
        if len(password) < self.min_length:
            raise InvalidInput(f"a password needs at least {self.min_length} characters")
        if len(password) > MAX_PASSWORD_CHARS:
            raise InvalidInput(f"a password may have at most {MAX_PASSWORD_CHARS} characters")
        if "\x00" in password:
            raise InvalidInput("a password must not contain NUL characters")
        if password.strip().lower() == username.lower():
            raise InvalidInput("a password must not be the username")

    def temporary(self) -> str:
        """A random password for an account someone else set up: shown once."""
        return secrets.token_urlsafe(max(12, self.min_length))
