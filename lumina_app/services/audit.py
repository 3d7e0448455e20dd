"""The audit log: each event goes to SQL (``lumina_audit``) and, with the same fields, to
the ``lumina_app.audit`` logger at INFO as one JSON object (for log shippers)."""

from __future__ import annotations

import json
import logging
from typing import Any

from lumina_app.domain import AuditEntry, AuditEvent, utcnow
from lumina_app.domain.views import iso_us
from lumina_app.storage.audit import AuditRecords

log = logging.getLogger("lumina_app.audit")


def audit_record(entry: AuditEntry) -> dict[str, Any]:
    """The JSON-able form, as logged and as the admin API lists it."""
    return {
        "at": iso_us(entry.at) if entry.at else None,
        "event": entry.event.value,
        "username": entry.username,
        "actor": entry.actor,
        "address": entry.client_ip,
        "detail": entry.detail,
    }


class AuditLog:
    def __init__(self, store: AuditRecords) -> None:
        self.store = store

    async def record(
        self,
        event: AuditEvent,
        *,
        username: str = "",
        actor: str = "",
        address: str = "",
        detail: str = "",
    ) -> None:
        entry = AuditEntry(
            event=event,
            username=username,
            actor=actor,
            client_ip=address,
            detail=detail,
            at=utcnow(),
        )
        await self.store.add(entry)
        record = audit_record(entry)
        log.info("audit %s", json.dumps(record), extra={"audit": record})

    async def entries(
        self, *, limit: int, before: int | None = None, username: str | None = None
    ) -> list[AuditEntry]:
        return await self.store.list(limit=limit, before=before, username=username)
