"""Archive fixtures: an ArchiveService over each SQL backend, and a seeded conversation."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lumina_app.archive.service import ArchiveService
from lumina_app.domain import ConversationInfo, ConversationStatus, Msg, MsgRole
from lumina_app.memory import MemoryManager, MemoryReads
from lumina_app.settings import load_settings
from lumina_app.storage.local.hot_window import LocalHotWindow
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.engine import create_engine

FIXTURES = Path(__file__).parent / "fixtures"
SEED_TREE = FIXTURES / "seed_tree"
SEED_CONV = SEED_TREE / "agents" / "innovator-001" / "conversations" / "conv-mn3112l3"
T0 = datetime(2026, 3, 23, 10, 12, 11, 993_456, tzinfo=UTC)

# (role, text): multi-line, Chinese, emoji, a system and a tool message, a "[USER]" look-alike.
TURNS = [
    [("user", "你好"), ("assistant", "你好,我是 Innovator。\n\n有什么可以帮你?")],
    [("user", "Line one\nline two 👋🏽"), ("tool", '{"ok": true}'), ("assistant", "Done.")],
    [("system", "Be brief."), ("user", "[2026-01-01T00:00:00.000Z] [USER]"), ("assistant", "")],
]


def make_archive(engine, root: Path) -> ArchiveService:
    hot = LocalHotWindow(window=20, max_conversations=100)
    cold = SQLColdStore(SQLDatabase(engine))
    reads = MemoryReads.over(cold, cold.db, window=20)
    return ArchiveService(
        MemoryManager(cold, hot, window=20, queries=ConversationQueries(cold.db)),
        reads.lookup,
        reads.archive,
        root,
    )


@pytest.fixture
def archive(engine, tmp_path: Path) -> ArchiveService:
    """Over SQLite, MariaDB and PostgreSQL (the ``engine`` fixture's backends)."""
    return make_archive(engine, tmp_path / "data")


@pytest.fixture
async def sqlite_archive(sqlite_database, tmp_path: Path) -> AsyncIterator[ArchiveService]:
    engine = create_engine(load_settings(database_url=sqlite_database.url).async_database_url)
    yield make_archive(engine, tmp_path / "data")
    await engine.dispose()


@pytest.fixture
def seed_tree(tmp_path: Path) -> Path:
    """A writable copy of the hand-written tree in the seed's own format."""
    target = tmp_path / "seed_tree"
    shutil.copytree(SEED_TREE, target)
    return target


async def seed_conversation(
    archive: ArchiveService,
    *,
    agent_id: str = "demo",
    turns: list[list[tuple[str, str]]] = TURNS,
    owner: str = "",
    start: datetime = T0,
    title: str = "测试 · archive",
) -> ConversationInfo:
    """A conversation with explicit, microsecond timestamps; returned freshly read."""
    cold = archive.memory.cold
    conv = await cold.create_conversation(
        agent_id=agent_id, title=title, owner=owner, created_at=start
    )
    await add_turns(archive, conv, turns, start=start)
    await cold.update_conversation(conv.id, status=ConversationStatus.COMPLETED)
    return await ConversationQueries(cold.db).get_conversation(conv.uuid)


async def add_turns(
    archive: ArchiveService,
    conv: ConversationInfo,
    turns: list[list[tuple[str, str]]],
    *,
    start: datetime,
) -> None:
    stamp = start
    for number, turn in enumerate(turns):
        turn_id = f"msg-{start.microsecond:x}-{number:03d}"
        msgs = []
        for role, text in turn:
            stamp += timedelta(seconds=1, microseconds=1_111)
            msgs.append(Msg(MsgRole(role.upper()), text, turn_id=turn_id, created_at=stamp))
        await archive.memory.cold.append_messages(conv.id, msgs)


def message_view(msgs: list[Msg]) -> list[tuple]:
    """What a round trip must keep: order, role, content, turn id, timestamp to the ms."""
    return [
        (m.seq, m.role, m.content, m.turn_id, m.created_at.isoformat(timespec="milliseconds"))
        for m in msgs
    ]
