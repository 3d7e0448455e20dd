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
        """The live session with this token hash (not revoked, not expired, its account not
        disabled), if any, with its account's role."""

    async def touch(self, session_id: int) -> None:
        """Record that the session was just used."""

    async def revoke(self, token_hash: str) -> SignInSession | None:
        """End the session with this token hash; the session, if it was live."""

    async def list_live(self, *, owner: str, user_id: int | None) -> list[SignInSession]:
        """A caller's live sessions, most recently seen first: a user's own, or (for a
        key holder, ``user_id`` None) those signed in with that owner's configured key."""

    async def revoke_by_id(
        self, session_id: int, *, owner: str, user_id: int | None
    ) -> SignInSession | None:
        """End one of the caller's live sessions (scoped as ``list_live``); None if none."""

    async def revoke_all(
        self, *, owner: str, user_id: int | None, keep: int | None = None
    ) -> list[int]:
        """End the caller's live sessions except ``keep``; the ids ended."""
