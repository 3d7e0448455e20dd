"""The contract of the audit log store (``sql.audit.AuditStore``)."""

from __future__ import annotations

from typing import Protocol

from lumina_app.domain import AuditEntry


class AuditRecords(Protocol):
    async def add(self, entry: AuditEntry) -> None: ...

    async def list(
        self, *, limit: int, before: int | None = None, username: str | None = None
    ) -> list[AuditEntry]:
        """Newest first; ``before`` an entry id (paging back), ``username`` one account's."""
