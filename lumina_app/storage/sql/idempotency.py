"""Idempotency keys in SQL: claim a key, then record the response the first request got."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from lumina_app.domain import utcnow
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import idempotency as I


@dataclass(slots=True)
class IdempotencyRecord:
    fingerprint: str
    response: dict[str, Any] | None


class IdempotencyStore:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def get(self, owner: str, key: str) -> IdempotencyRecord | None:
        query = sa.select(I.c.fingerprint, I.c.response).where(I.c.owner == owner, I.c.key == key)
        async with self.db.connect() as conn:
            row = (await conn.execute(query)).first()
        return IdempotencyRecord(row.fingerprint, row.response) if row else None

    async def claim(self, owner: str, key: str, fingerprint: str) -> bool:
        """True if this request now owns the key; False if another got there first."""
        try:
            async with self.db.begin() as conn:
                await conn.execute(
                    sa.insert(I).values(
                        owner=owner,
                        key=key,
                        fingerprint=fingerprint,
                        response=None,
                        created_at=utcnow(),
                    )
                )
        except IntegrityError:
            return False
        return True

    async def complete(self, owner: str, key: str, response: dict[str, Any]) -> None:
        async with self.db.begin() as conn:
            await conn.execute(
                sa.update(I).where(I.c.owner == owner, I.c.key == key).values(response=response)
            )

    async def release(self, owner: str, key: str) -> None:
        """The first request failed: free the key so a retry can try again."""
        async with self.db.begin() as conn:
            await conn.execute(sa.delete(I).where(I.c.owner == owner, I.c.key == key))
