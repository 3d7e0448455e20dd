"""Accounts in SQL. Disabling one ends its sessions and revokes its keys in the same
transaction, so no request that starts after it commits gets in with them."""

from __future__ import annotations

import dataclasses

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from lumina_app.domain import PurgeCounts, Role, User, UsernameTaken, utcnow
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import api_keys as K
from lumina_app.storage.sql.models import idempotency as IDEM
from lumina_app.storage.sql.models import memories as MEM
from lumina_app.storage.sql.models import sessions as S
from lumina_app.storage.sql.models import users as U

# A password hash nothing verifies against: the account is being deleted (resumable: the
# mark is committed before anything goes, and only the last transaction removes the row).
DELETING = "!deleting"

_USER_COLUMNS = tuple(U.c[field.name] for field in dataclasses.fields(User))


def user_of(row: sa.Row) -> User:
    """A ``User`` from a row holding the columns of ``_USER_COLUMNS`` (joins label them)."""
    return User(
        id=row.id,
        username=row.username,
        role=Role(row.role),
        created_at=row.created_at,
        disabled_at=row.disabled_at,
        must_change_password=bool(row.must_change_password),
    )


class UserStore:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def create(
        self, *, username: str, password_hash: str, role: Role, must_change_password: bool
    ) -> User:
        now = utcnow()
        values = {
            "username": username,
            "password_hash": password_hash,
            "role": role.value,
            "must_change_password": must_change_password,
            "created_at": now,
            "password_changed_at": now,
        }
        try:
            result = await self.db.write(sa.insert(U).values(values))
        except IntegrityError:
            raise UsernameTaken(username) from None
        return User(
            id=result.inserted_primary_key[0],
            username=username,
            role=role,
            created_at=now,
            must_change_password=must_change_password,
        )

    async def find(self, username: str) -> tuple[User, str] | None:
        return await self._one(U.c.username == username)

    async def get(self, user_id: int) -> tuple[User, str] | None:
        return await self._one(U.c.id == user_id)

    async def _one(self, where: sa.ColumnElement[bool]) -> tuple[User, str] | None:
        query = sa.select(*_USER_COLUMNS, U.c.password_hash).where(where)
        row = await self.db.first(query)
        return (user_of(row), row.password_hash) if row else None

    async def list(self) -> list[User]:
        query = sa.select(*_USER_COLUMNS).order_by(U.c.username)
        return [user_of(row) for row in await self.db.rows(query)]

    async def exists(self) -> bool:
        return await self.db.first(sa.select(U.c.id).limit(1)) is not None

    async def set_password(
        self, user_id: int, password_hash: str, *, must_change_password: bool
    ) -> None:
        await self.db.write(
            sa.update(U)
            .where(U.c.id == user_id)
            .values(
                password_hash=password_hash,
                must_change_password=must_change_password,
                password_changed_at=utcnow(),
            )
        )

    async def disable(self, user_id: int, *, deleting: bool = False) -> tuple[int, int]:
        now = utcnow()
        async with self.db.begin() as conn:
            await conn.execute(
                sa.update(U)
                .where(U.c.id == user_id, U.c.disabled_at.is_(None))
                .values(disabled_at=now)
            )
            if deleting:
                await conn.execute(
                    sa.update(U).where(U.c.id == user_id).values(password_hash=DELETING)
                )
            sessions = await conn.execute(
                sa.update(S)
                .where(S.c.user_id == user_id, S.c.revoked_at.is_(None))
                .values(revoked_at=now)
            )
            keys = await conn.execute(
                sa.update(K)
                .where(K.c.user_id == user_id, K.c.revoked_at.is_(None))
                .values(revoked_at=now)
            )
        return sessions.rowcount, keys.rowcount

    async def enable(self, user_id: int) -> None:
        await self.db.write(sa.update(U).where(U.c.id == user_id).values(disabled_at=None))

    async def deleting(self) -> list[User]:
        """Accounts whose deletion began and has not finished."""
        query = sa.select(*_USER_COLUMNS).where(U.c.password_hash == DELETING)
        return [user_of(row) for row in await self.db.rows(query.order_by(U.c.id))]

    async def purge(self, user_id: int, owner: str) -> PurgeCounts:
        """The account's row and what it owns beside conversations (long-term memories,
        sessions, API keys, idempotency records), in one transaction."""
        async with self.db.begin() as conn:
            memories = await conn.execute(sa.delete(MEM).where(MEM.c.owner == owner))
            sessions = await conn.execute(
                sa.delete(S).where(sa.or_(S.c.user_id == user_id, S.c.owner == owner))
            )
            keys = await conn.execute(sa.delete(K).where(K.c.user_id == user_id))
            idempotency = await conn.execute(sa.delete(IDEM).where(IDEM.c.owner == owner))
            account = await conn.execute(sa.delete(U).where(U.c.id == user_id))
        return PurgeCounts(
            account=account.rowcount > 0,
            memories=memories.rowcount,
            sessions=sessions.rowcount,
            keys=keys.rowcount,
            idempotency_keys=idempotency.rowcount,
        )
