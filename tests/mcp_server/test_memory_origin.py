"""A memory's origin ("added over MCP by <client>", #46) kept where memories go: the
archive's memory files (export, then import gives it back) and the Memory page's row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from lumina_app.archive.service import ArchiveService
from lumina_app.memory.long_term import LongTermMemory
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import memories as T
from lumina_app.ui.state.memories import memory_row
from tests.archive.conftest import make_archive

ORIGIN = "added over MCP by Claude Code"


@pytest.fixture
def archive(engine, tmp_path: Path) -> ArchiveService:
    service = make_archive(engine, tmp_path / "data")
    service.memories = LongTermMemory(SQLDatabase(engine), None)
    return service


async def test_the_origin_survives_export_and_import(archive: ArchiveService, tmp_path) -> None:
    lt = archive.memories
    over_mcp, _ = await lt.add("alice", "assistant", "Uses vim", origin=ORIGIN)
    by_hand, _ = await lt.add("alice", "assistant", "Drinks tea")
    assert (over_mcp.origin, by_hand.origin) == (ORIGIN, None)
    assert (await lt.get("alice", over_mcp.id)).origin == ORIGIN

    out = tmp_path / "out"
    await archive.export_all(out)
    written = json.loads((out / "agents/assistant/memory/alice.json").read_text("utf-8"))
    assert [m.get("origin") for m in written["memories"]] == [ORIGIN, None]

    async with lt.db.begin() as conn:
        await conn.execute(sa.delete(T).where(T.c.owner == "alice"))
    await archive.import_path(out, owner="alice")
    back = {m.text: m.origin for m in await lt.listing("alice")}
    assert back == {"Uses vim": ORIGIN, "Drinks tea": None}

    rows = {r["text"]: r["origin"] for r in map(memory_row, await lt.listing("alice"))}
    assert rows == {"Uses vim": ORIGIN, "Drinks tea": ""}  # the page: "added by hand"
