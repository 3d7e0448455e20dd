"""Users' API keys in SQL, found by the hash of the key."""

from __future__ import annotations

import sqlalchemy as sa

from lumina_app.domain import ApiKeyInfo, User, utcnow
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import api_keys as K
from lumina_app.storage.sql.models import users as U
from lumina_app.storage.sql.users import user_of

_KEY_COLUMNS = (
    K.c.id.label("key_id"),
    K.c.user_id,
    U.c.username,
    K.c.name,
    K.c.prefix,
    K.c.created_at.label("key_created_at"),
    K.c.last_used_at,
    K.c.revoked_at,
)
_USER_COLUMNS = (U.c.id, U.c.role, U.c.created_at, U.c.disabled_at, U.c.must_change_password)
_JOINED = K.join(U, U.c.id == K.c.user_id)


def _key(row: sa.Row) -> ApiKeyInfo:
    """A row that starts with ``_KEY_COLUMNS`` (``ApiKeyInfo``'s fields, in order)."""
    return ApiKeyInfo(*row[: len(_KEY_COLUMNS)])


class ApiKeyStore:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def create(self, *, user_id: int, name: str, prefix: str, key_hash: str) -> ApiKeyInfo:
        values = {
            "user_id": user_id,
            "name": name,
            "prefix": prefix,
            "key_hash": key_hash,
            "created_at": utcnow(),
        }
        result = await self.db.write(sa.insert(K).values(values))
        created = await self.get(result.inserted_primary_key[0])
        assert created is not None
        return created

    async def find(self, key_hash: str) -> tuple[ApiKeyInfo, User] | None:
        query = (
            sa.select(*_KEY_COLUMNS, *_USER_COLUMNS)
            .select_from(_JOINED)
            .where(K.c.key_hash == key_hash, K.c.revoked_at.is_(None), U.c.disabled_at.is_(None))
        )
        row = await self.db.first(query)
        return (_key(row), user_of(row)) if row else None

    async def list(self, *, user_id: int | None = None) -> list[ApiKeyInfo]:
        query = sa.select(*_KEY_COLUMNS).select_from(_JOINED).where(K.c.revoked_at.is_(None))
        if user_id is not None:
            query = query.where(K.c.user_id == user_id)
        return [_key(row) for row in await self.db.rows(query.order_by(K.c.id.desc()))]

    async def get(self, key_id: int) -> ApiKeyInfo | None:
        query = sa.select(*_KEY_COLUMNS).select_from(_JOINED).where(K.c.id == key_id)
        row = await self.db.first(query)
        return _key(row) if row else None

    async def revoke(self, key_id: int, *, user_id: int | None = None) -> bool:
        query = sa.update(K).where(K.c.id == key_id, K.c.revoked_at.is_(None))
        if user_id is not None:
            query = query.where(K.c.user_id == user_id)
        result = await self.db.write(query.values(revoked_at=utcnow()))
        return result.rowcount == 1

    async def revoke_all(self, *, user_id: int) -> list[int]:
        live = [K.c.user_id == user_id, K.c.revoked_at.is_(None)]
        async with self.db.begin() as conn:
            ids = list((await conn.execute(sa.select(K.c.id).where(*live))).scalars())
            if ids:
                await conn.execute(sa.update(K).where(K.c.id.in_(ids)).values(revoked_at=utcnow()))
        return ids

    async def touch(self, key_id: int) -> None:
        await self.db.write(sa.update(K).where(K.c.id == key_id).values(last_used_at=utcnow()))
