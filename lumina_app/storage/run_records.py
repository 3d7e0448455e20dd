"""The contract of the run records store (``sql.runs.RunStore``): what each run used and
how it ended, and closing the runs whose process is gone."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from lumina_app.domain import RunRecord


class RunRecords(Protocol):
    async def get_run(self, run_id: str, *, owner: str | None = None) -> RunRecord | None: ...

    async def delete_run(self, run_id: str, *, owner: str) -> bool:
        """Forget an ended run's record (its messages stay); False if none or running."""

    async def running_runs(self) -> list[tuple[str, str, datetime]]:
        """``(run_id, conversation uuid, started_at)`` of every run recorded as running."""

    async def interrupt_run(self, run_id: str, reason: str) -> bool:
        """Close one orphaned run as interrupted, its text kept; False if it had ended."""

    async def close_streaming(self) -> int:
        """Crash recovery: every answer left streaming becomes interrupted."""
