"""Moving the local operator's data to a user account, in one transaction."""

from __future__ import annotations

import sqlalchemy as sa

from lumina_app.domain import ClaimCounts
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import idempotency as I
from lumina_app.storage.sql.models import runs as R
from lumina_app.storage.sql.models import sessions as S


class ClaimStore:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def claim(self, *, from_owner: str, to_owner: str, user_id: int) -> ClaimCounts:
        async with self.db.begin() as conn:
            conversations = await conn.execute(
                sa.update(C).where(C.c.owner == from_owner).values(owner=to_owner)
            )
            runs = await conn.execute(
                sa.update(R).where(R.c.owner == from_owner).values(owner=to_owner)
            )
            # (owner, key) is the primary key: a key the user already used keeps the user's
            # record; the operator's record of it (a retry's answer) is dropped.
            mine, theirs = I.alias("mine"), I.alias("theirs")
            clash = (
                sa.select(mine.c.key)
                .join(theirs, sa.and_(theirs.c.key == mine.c.key, theirs.c.owner == to_owner))
                .where(mine.c.owner == from_owner)
            )
            clashing = list((await conn.execute(clash)).scalars())
            if clashing:
                await conn.execute(
                    sa.delete(I).where(I.c.owner == from_owner, I.c.key.in_(clashing))
                )
            moved = await conn.execute(
                sa.update(I).where(I.c.owner == from_owner).values(owner=to_owner)
            )
            sessions = await conn.execute(
                sa.update(S).where(S.c.owner == from_owner).values(owner=to_owner, user_id=user_id)
            )
        return ClaimCounts(
            conversations=conversations.rowcount,
            runs=runs.rowcount,
            idempotency_keys=moved.rowcount,
            idempotency_dropped=len(clashing),
            sessions=sessions.rowcount,
        )
