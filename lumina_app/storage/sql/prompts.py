"""System prompts as runs used them, once per distinct text (table lumina_prompt)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from lumina_app.domain import utcnow
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import prompts as P


class PromptStore:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def save(self, digest: str, text: str) -> None:
        try:
            async with self.db.begin() as conn:
                exists = await conn.scalar(sa.select(P.c.hash).where(P.c.hash == digest))
                if exists is None:
                    await conn.execute(
                        sa.insert(P).values(hash=digest, text=text, created_at=utcnow())
                    )
        except IntegrityError:
            pass  # another process kept the same text meanwhile

    async def get(self, digest: str) -> str | None:
        return await self.db.scalar(sa.select(P.c.text).where(P.c.hash == digest))
