"""Quotas per owner (0 = off), counted in SQL before a conversation or message is stored:
the conversations an owner has, the messages stored in its conversations in the last 24
hours, and the bytes of text its messages hold. Checked, then written: requests racing
each other may pass a quota by the few that were in flight together."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from datetime import timedelta

import sqlalchemy as sa

from lumina_app.domain import QuotaExceeded, StoredBytesExceeded, utcnow
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M

DAY = timedelta(hours=24)


@dataclass(eq=False, repr=False)
class OwnerQuotas:
    db: SQLDatabase
    _: KW_ONLY
    max_conversations: int = 0
    max_messages_per_day: int = 0
    max_stored_bytes: int = 0

    async def check(self, owner: str, *, conversations: int = 0, messages: int = 0) -> None:
        """QuotaExceeded (a 429 naming the limit) if storing this much more would pass one."""
        if conversations and self.max_conversations:
            await self._conversations(owner, conversations)
        if messages and self.max_messages_per_day:
            await self._messages(owner, messages)
        if messages and self.max_stored_bytes:
            await self._stored_bytes(owner)

    async def _stored_bytes(self, owner: str) -> None:
        """Refused once the owner's messages hold the limit's bytes (new input only: what
        is accepted is never cut, and an answer streaming when it is reached still ends)."""
        octets = _octets(M.c.content, self.db.dialect)
        query = (
            sa.select(sa.func.coalesce(sa.func.sum(octets), 0))
            .select_from(M.join(C, C.c.id == M.c.conversation_id))
            .where(C.c.owner == owner)
        )
        have = int(await self.db.scalar(query))
        if have >= self.max_stored_bytes:
            raise StoredBytesExceeded(
                f"this owner's messages hold {have} bytes of text; delete conversations "
                "to make room",
                setting="LUMINA_MAX_STORED_BYTES_PER_OWNER",
                limit=self.max_stored_bytes,
                retry_after=None,
            )

    async def _conversations(self, owner: str, more: int) -> None:
        query = sa.select(sa.func.count()).select_from(C).where(C.c.owner == owner)
        have = await self.db.scalar(query)
        if have + more > self.max_conversations:
            raise QuotaExceeded(
                f"this owner has {have} conversations; delete some to start another",
                setting="LUMINA_MAX_CONVERSATIONS_PER_OWNER",
                limit=self.max_conversations,
                retry_after=None,
            )

    async def _messages(self, owner: str, more: int) -> None:
        now = utcnow()
        query = (
            sa.select(sa.func.count(), sa.func.min(M.c.created_at))
            .select_from(M.join(C, C.c.id == M.c.conversation_id))
            .where(C.c.owner == owner, M.c.created_at >= now - DAY)
        )
        have, oldest = await self.db.first(query)
        if have + more > self.max_messages_per_day:
            # Room comes back as the oldest of the day's messages turns a day old.
            wait = (oldest + DAY - now) if oldest is not None else DAY
            raise QuotaExceeded(
                f"{have} messages were stored in this owner's conversations in the last "
                f"24 hours, and this request brings {more}",
                setting="LUMINA_MAX_MESSAGES_PER_OWNER_PER_DAY",
                limit=self.max_messages_per_day,
                retry_after=max(1, int(wait.total_seconds()) + 1),
            )


def _octets(column: sa.ColumnElement, dialect: str) -> sa.ColumnElement:
    """The UTF-8 bytes of a text column: ``length`` counts characters on SQLite (but bytes
    of a blob) and PostgreSQL, bytes on MariaDB/MySQL."""
    if dialect == "sqlite":
        return sa.func.length(sa.cast(column, sa.LargeBinary))
    if dialect == "postgresql":
        return sa.func.octet_length(column)
    return sa.func.length(column)
