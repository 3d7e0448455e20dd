"""Run records: what each run used and how it ended, and closing runs whose process is
gone. A run's record is inserted in the same transaction as its question (``writes``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from lumina_app.domain import (
    ConversationStatus,
    MessageStatus,
    RunRecord,
    RunStatus,
    Scenario,
    utcnow,
)
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.models import runs as R

# The record's field for each ``lumina_run`` column: the one place the row key's Python name
# (``conversation_pk``) meets its SQL column name (``conversation_id``), which stays.
_FIELD_OF_COLUMN = {c.name: c.name for c in R.columns} | {"conversation_id": "conversation_pk"}


def run_values(run: RunRecord) -> dict[str, Any]:
    """The record as column values (enums as their plain strings)."""
    values = {column: getattr(run, field) for column, field in _FIELD_OF_COLUMN.items()}
    values["status"], values["scenario"] = str(run.status), str(run.scenario)
    return values


def run_record(columns: Mapping[str, Any]) -> RunRecord:
    """A ``lumina_run`` row's columns (stored shape, ``conversation_id``) as a record."""
    record = RunRecord(**{field: columns[column] for column, field in _FIELD_OF_COLUMN.items()})
    record.status, record.scenario = RunStatus(columns["status"]), Scenario(columns["scenario"])
    return record


class RunStore:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def close_streaming(self) -> int:
        """Crash recovery: answers left ``streaming`` become ``interrupted``; no run stays open."""
        now = utcnow()
        async with self.db.begin() as conn:
            result = await conn.execute(
                sa.update(M)
                .where(M.c.status == MessageStatus.STREAMING.value)
                .values(status=MessageStatus.INTERRUPTED.value, updated_at=now)
            )
            await conn.execute(
                sa.update(C)
                .where(C.c.status == ConversationStatus.RUNNING.value)
                .values(status=ConversationStatus.FAILED.value, updated_at=now)
            )
            await conn.execute(
                sa.update(R)
                .where(R.c.status == RunStatus.RUNNING.value)
                .values(
                    status=RunStatus.INTERRUPTED.value,
                    finished_at=now,
                    error="process ended mid-run",
                )
            )
        return result.rowcount

    async def running_runs(self) -> list[tuple[str, str, datetime]]:
        """``(run_id, conversation uuid, started_at)`` of every run recorded as running."""
        query = (
            sa.select(R.c.run_id, C.c.uuid, R.c.started_at)
            .join(C, C.c.id == R.c.conversation_id)
            .where(R.c.status == RunStatus.RUNNING.value)
        )
        return [(row.run_id, row.uuid, row.started_at) for row in await self.db.rows(query)]

    async def interrupt_run(self, run_id: str, reason: str) -> bool:
        """Close one orphaned run (its process is gone) as interrupted, text kept."""
        now = utcnow()
        async with self.db.begin() as conn:
            row = (
                await conn.execute(
                    sa.select(R.c.conversation_id, R.c.assistant_message_id).where(
                        R.c.run_id == run_id, R.c.status == RunStatus.RUNNING.value
                    )
                )
            ).first()
            if row is None:
                return False
            await conn.execute(
                sa.update(R)
                .where(R.c.run_id == run_id)
                .values(status=RunStatus.INTERRUPTED.value, finished_at=now, error=reason)
            )
            await conn.execute(
                sa.update(M)
                .where(
                    M.c.id == row.assistant_message_id,
                    M.c.status == MessageStatus.STREAMING.value,
                )
                .values(status=MessageStatus.INTERRUPTED.value, updated_at=now)
            )
            await conn.execute(
                sa.update(C)
                .where(
                    C.c.id == row.conversation_id,
                    C.c.status == ConversationStatus.RUNNING.value,
                )
                .values(status=ConversationStatus.FAILED.value, updated_at=now)
            )
        return True

    async def delete_run(self, run_id: str, *, owner: str) -> bool:
        query = sa.delete(R).where(
            R.c.run_id == run_id, R.c.owner == owner, R.c.status != RunStatus.RUNNING.value
        )
        return (await self.db.write(query)).rowcount > 0

    async def get_run(self, run_id: str, *, owner: str | None = None) -> RunRecord | None:
        query = sa.select(R).where(R.c.run_id == run_id)
        if owner is not None:
            query = query.where(R.c.owner == owner)
        row = await self.db.first(query)
        return run_record(row._mapping) if row else None
