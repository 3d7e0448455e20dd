"""The audit log in SQL: appended to, read newest first."""

from __future__ import annotations

import sqlalchemy as sa

from lumina_app.domain import AuditEntry, AuditEvent, utcnow
from lumina_app.domain.text import storable
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import audit as A

# Column widths: longer text is cut and made storable, never refused (a failed sign-in's
# name is anyone's).
_WIDTH = {"username": 128, "actor": 128, "client_ip": 64, "detail": 255}


class AuditStore:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def add(self, entry: AuditEntry) -> None:
        values = {name: storable(getattr(entry, name)[:width]) for name, width in _WIDTH.items()}
        await self.db.write(
            sa.insert(A).values(event=entry.event.value, at=entry.at or utcnow(), **values)
        )

    async def list(
        self, *, limit: int, before: int | None = None, username: str | None = None
    ) -> list[AuditEntry]:
        query = sa.select(A).order_by(A.c.id.desc()).limit(limit)
        if before is not None:
            query = query.where(A.c.id < before)
        if username is not None:
            query = query.where(A.c.username == username)
        rows = await self.db.rows(query)
        # The table's columns are the entry's fields.
        return [AuditEntry(**{**row._mapping, "event": AuditEvent(row.event)}) for row in rows]
