"""Sign-in sessions in SQL: one row per signed-in browser, found by the hash of its token."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from lumina_app.domain import SignInSession, utcnow
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import sessions as S
from lumina_app.storage.sql.models import users as U

_FIELDS = [c.name for c in S.columns if c.name not in ("token_hash", "revoked_at")]
_COLUMNS = [S.c[name] for name in _FIELDS]


def _session(row: sa.Row) -> SignInSession:
    role = getattr(row, "role", None) or ""
    return SignInSession(**{name: getattr(row, name) for name in _FIELDS}, role=role)


def _live() -> tuple[sa.ColumnElement[bool], ...]:
    return S.c.revoked_at.is_(None), S.c.expires_at > utcnow()


def _of(owner: str, user_id: int | None) -> sa.ColumnElement[bool]:
    """A user's sessions; for a key holder, the key sessions of its owner."""
    if user_id is not None:
        return S.c.user_id == user_id
    return sa.and_(S.c.owner == owner, S.c.user_id.is_(None))


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
        result = await self.db.write(sa.insert(S).values(values))
        return SignInSession(
            id=result.inserted_primary_key[0],
            **{k: v for k, v in values.items() if k != "token_hash"},
        )

    async def find(self, token_hash: str) -> SignInSession | None:
        # A session of a disabled account is not found, even before it is revoked.
        query = (
            sa.select(*_COLUMNS, U.c.role)
            .select_from(S.outerjoin(U, U.c.id == S.c.user_id))
            .where(S.c.token_hash == token_hash, *_live())
            .where(sa.or_(S.c.user_id.is_(None), U.c.disabled_at.is_(None)))
        )
        row = await self.db.first(query)
        return _session(row) if row else None

    async def touch(self, session_id: int) -> None:
        await self.db.write(sa.update(S).where(S.c.id == session_id).values(last_seen_at=utcnow()))

    async def revoke(self, token_hash: str) -> SignInSession | None:
        async with self.db.begin() as conn:
            row = (
                await conn.execute(sa.select(*_COLUMNS).where(S.c.token_hash == token_hash))
            ).first()
            result = await conn.execute(
                sa.update(S)
                .where(S.c.token_hash == token_hash, S.c.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
        return _session(row) if row is not None and result.rowcount else None

    async def list_live(self, *, owner: str, user_id: int | None) -> list[SignInSession]:
        query = (
            sa.select(*_COLUMNS)
            .where(_of(owner, user_id), *_live())
            .order_by(S.c.last_seen_at.desc(), S.c.id.desc())
        )
        return [_session(row) for row in await self.db.rows(query)]

    async def revoke_by_id(
        self, session_id: int, *, owner: str, user_id: int | None
    ) -> SignInSession | None:
        scope = (S.c.id == session_id, _of(owner, user_id), *_live())
        async with self.db.begin() as conn:
            row = (await conn.execute(sa.select(*_COLUMNS).where(*scope))).first()
            if row is None:
                return None
            await conn.execute(sa.update(S).where(*scope).values(revoked_at=utcnow()))
        return _session(row)

    async def revoke_all(
        self, *, owner: str, user_id: int | None, keep: int | None = None
    ) -> list[int]:
        scope = [_of(owner, user_id), *_live()]
        if keep is not None:
            scope.append(S.c.id != keep)
        async with self.db.begin() as conn:
            ids = list((await conn.execute(sa.select(S.c.id).where(*scope))).scalars())
            if ids:
                await conn.execute(sa.update(S).where(S.c.id.in_(ids)).values(revoked_at=utcnow()))
        return ids
