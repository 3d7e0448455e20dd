"""The contract of moving the local operator's data to a user (``sql.claims.ClaimStore``)."""

from __future__ import annotations

from typing import Protocol

from lumina_app.domain import ClaimCounts


class DataClaims(Protocol):
    async def claim(self, *, from_owner: str, to_owner: str, user_id: int) -> ClaimCounts:
        """Move every conversation, run, idempotency record and session of ``from_owner``
        to ``to_owner`` in one transaction."""
