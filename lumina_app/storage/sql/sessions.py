"""Sign-in sessions in SQL: one row per signed-in browser, found by the hash of its token."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from lumina_app.domain import SignInSession, utcnow
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import sessions as S

_FIELDS = [c.name for c in S.columns if c.name not in ("token_hash", "revoked_at")]


def _session(row: sa.Row) -> SignInSession:
    return SignInSession(**{name: getattr(row, name) for name in _FIELDS})


class SessionStore:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

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
    ) -> SignInSession:
        now = utcnow()
        values = {
            "token_hash": token_hash,
            "owner": owner,
            "user_id": user_id,
            "method": method,
            "created_at": now,
            "expires_at": expires_at,
            "last_seen_at": now,
            "user_agent": user_agent[:255],
            "client_ip": client_ip[:64],
        }
        async with self.db.begin() as conn:
            result = await conn.execute(sa.insert(S).values(values))
        return SignInSession(
            id=result.inserted_primary_key[0],
            **{k: v for k, v in values.items() if k != "token_hash"},
        )

    async def find(self, token_hash: str) -> SignInSession | None:
        query = sa.select(S).where(
            S.c.token_hash == token_hash, S.c.revoked_at.is_(None), S.c.expires_at > utcnow()
        )
        async with self.db.connect() as conn:
            row = (await conn.execute(query)).first()
        return _session(row) if row else None

    async def touch(self, session_id: int) -> None:
        async with self.db.begin() as conn:
            await conn.execute(
                sa.update(S).where(S.c.id == session_id).values(last_seen_at=utcnow())
            )

    async def revoke(self, token_hash: str) -> None:
        async with self.db.begin() as conn:
            await conn.execute(
                sa.update(S)
                .where(S.c.token_hash == token_hash, S.c.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )

    async def revoke_owner(self, owner: str) -> int:
        async with self.db.begin() as conn:
            result = await conn.execute(
                sa.update(S)
                .where(S.c.owner == owner, S.c.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
        return result.rowcount
