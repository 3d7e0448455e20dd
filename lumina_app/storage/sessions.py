"""The contract of the sign-in session store (``sql.sessions.SessionStore``)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from lumina_app.domain import SignInSession


class SessionRecords(Protocol):
    async def create(
        self,
        *,
        token_hash: str,
        owner: str,
        method: str,
        expires_at: datetime,
        user_agent: str,
        client_ip: str,
        user_id: int | None = None,
    ) -> SignInSession: ...

    async def find(self, token_hash: str) -> SignInSession | None:
        """The live session with this token hash (not revoked, not expired), if any."""

    async def touch(self, session_id: int) -> None:
        """Record that the session was just used."""

    async def revoke(self, token_hash: str) -> None: ...

    async def revoke_owner(self, owner: str) -> int:
        """End every session of an owner (disabled account, claimed data); how many ended."""
