"""The contract of the user API key store (``sql.api_keys.ApiKeyStore``)."""

from __future__ import annotations

from typing import Protocol

from lumina_app.domain import ApiKeyInfo, User


class ApiKeyRecords(Protocol):
    async def create(self, *, user_id: int, name: str, prefix: str, key_hash: str) -> ApiKeyInfo:
        """Record a new key (its hash and first characters only)."""

    async def find(self, key_hash: str) -> tuple[ApiKeyInfo, User] | None:
        """The live key with this hash and its account: not revoked, account not disabled."""

    async def list(self, *, user_id: int | None = None) -> list[ApiKeyInfo]:
        """Live (unrevoked) keys, newest first; every user's when ``user_id`` is None."""

    async def get(self, key_id: int) -> ApiKeyInfo | None: ...

    async def revoke(self, key_id: int, *, user_id: int | None = None) -> bool:
        """Revoke a live key (only that user's, when given); False if there was none."""

    async def revoke_all(self, *, user_id: int) -> list[int]:
        """Revoke every live key of a user; the ids revoked."""

    async def touch(self, key_id: int) -> None:
        """Record that the key was just used."""
