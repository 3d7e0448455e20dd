"""Long-term memories in the archive (#27), on SQLite, MariaDB and PostgreSQL:
``agents/<agentId>/memory/<owner>.json`` written by an export and read back by an import
for the importing owner only; a hostile file is refused whole, with nothing written."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from lumina_app.archive.limits import ImportLimits
from lumina_app.archive.memory_files import file_name, owner_of
from lumina_app.archive.service import ArchiveService
from lumina_app.domain.memories import MemoryStatus
from lumina_app.domain.views import iso_ms
from lumina_app.memory.long_term import LongTermMemory
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import memories as T
from tests.archive.conftest import make_archive, seed_conversation

ALL = tuple(MemoryStatus)


@pytest.fixture
def archive(engine, tmp_path: Path) -> ArchiveService:
    service = make_archive(engine, tmp_path / "data")
    service.memories = LongTermMemory(SQLDatabase(engine), None)
    return service


async def _seed(archive: ArchiveService):
    conv = await seed_conversation(archive, owner="alice")
    lt = archive.memories
    name, _ = await lt.add(
        "alice", "assistant", "My name is Ada", conversation_uuid=conv.uuid, seq=1
    )
    await lt.add("alice", "assistant", "I work on graph databases", pinned=True)
    gone, _ = await lt.add("alice", "assistant", "I live in Paris")
    await lt.forget("alice", gone.id)
    newer = await lt.supersede(
        "alice", name.id, "Call me Ada L.", agent_id="assistant", conversation_uuid=conv.uuid, seq=3
    )
    await lt.add("bob", "assistant", "Bob prefers tea")
    return conv, newer


def _shape(memories) -> list[tuple]:
    return sorted(
        (m.text, m.status.value, m.pinned, m.conversation_uuid, m.seq, iso_ms(m.created_at))
        for m in memories
    )


async def _wipe(archive: ArchiveService, owner: str) -> None:
    async with archive.memories.db.begin() as conn:
        await conn.execute(sa.delete(T).where(T.c.owner == owner))


async def test_export_then_import_gives_back_the_owners_memories(archive, tmp_path) -> None:
    conv, _ = await _seed(archive)
    before = await archive.memories.listing("alice", statuses=ALL)
    out = tmp_path / "out"

    report = await archive.export_all(out)

    folder = out / "agents" / "assistant" / "memory"
    assert sorted(p.name for p in folder.iterdir()) == ["alice.json", "bob.json"]
    written = json.loads((folder / "alice.json").read_text(encoding="utf-8"))
    assert (written["agentId"], written["owner"]) == ("assistant", "alice")
    assert [m["text"] for m in written["memories"]] == [
        "My name is Ada",
        "I work on graph databases",
        "Call me Ada L.",
    ]  # the forgotten one is not exported
    assert report.memories == 4

    await _wipe(archive, "alice")
    imported = await archive.import_path(out, owner="alice")

    (refused,) = imported.errors  # bob's file is not alice's to import
    assert "bob.json: holds the memories of owner 'bob'" in refused
    after = await archive.memories.listing("alice", statuses=ALL)
    assert _shape(after) == _shape(m for m in before if m.status is not MemoryStatus.DELETED)
    old = next(m for m in after if m.status is MemoryStatus.SUPERSEDED)
    new = next(m for m in after if m.text == "Call me Ada L.")
    assert old.superseded_by == new.id  # re-pointed at the new row
    assert (new.conversation_uuid, new.seq) == (conv.uuid, 3)
    assert [m.text for m, _ in await archive.memories.search("alice", "Ada")] == ["Call me Ada L."]
    assert imported.memories_added == 3
    assert len(await archive.memories.listing("bob")) == 1  # bob's own: untouched

    again = await archive.import_path(out, owner="alice")
    assert again.memories_added == 0  # idempotent
    assert len(await archive.memories.listing("alice", statuses=ALL)) == 3


async def test_a_zip_carries_the_memory_files(archive, tmp_path) -> None:
    await _seed(archive)
    out = tmp_path / "out"
    await archive.export_all(out)
    packed = tmp_path / "all.zip"
    with zipfile.ZipFile(packed, "w") as zipped:
        for path in sorted(out.rglob("*")):
            if path.is_file():
                zipped.write(path, path.relative_to(out).as_posix())
    await _wipe(archive, "bob")

    report = await archive.import_path(packed, owner="bob")

    assert report.memories_added == 1
    assert [m.text for m in await archive.memories.listing("bob")] == ["Bob prefers tea"]


def _memory_file(root: Path, named: str, memories: list, **fields) -> Path:
    folder = root / "agents" / "assistant" / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(named)
    body = {"agentId": "assistant", "owner": named, "memories": memories, **fields}
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


GOOD = {"id": 1, "text": "I like jazz", "status": "active", "createdAt": "2026-03-01T10:00:00Z"}


@pytest.mark.parametrize(
    ("memories", "fields", "problem"),
    [
        ([GOOD, {**GOOD, "id": 2, "status": "forgotten"}], {}, "entry 1: 'status' must be one of"),
        ([GOOD, {**GOOD, "id": 2, "text": "x" * 501}], {}, "longer than 500 characters"),
        ([GOOD, {**GOOD, "id": 2, "text": "a\x00b"}], {}, "must not contain NUL"),
        ([GOOD, {**GOOD, "id": 1}], {}, "'id' 1 appears twice"),
        ([{**GOOD, "supersededBy": 9}], {}, "'supersededBy' 9 is not in this file"),
        ([{**GOOD, "createdAt": "2099-01-01T00:00:00Z"}], {}, "out of range"),
        ([{**GOOD, "conversationId": "../x"}], {}, "must be a conversation id"),
        ([{**GOOD, "pinned": "yes"}], {}, "'pinned' must be true or false"),
        ([GOOD], {"owner": "mallory"}, "must be the owner the file is named for"),
        ([GOOD], {"agentId": "other"}, "must be the folder's agent"),
        ("all of them", {}, "'memories' must be an array"),
    ],
)
async def test_a_hostile_file_is_refused_whole(archive, tmp_path, memories, fields, problem):
    path = _memory_file(tmp_path / "in", "alice", memories, **fields)

    report = await archive.import_path(tmp_path / "in", owner="alice")

    (error,) = report.errors
    assert error.startswith(str(path)) and problem in error
    assert await archive.memories.listing("alice", statuses=ALL) == []  # nothing half-written


async def test_bad_json_and_oversize_files_are_refused(archive, tmp_path) -> None:
    path = _memory_file(tmp_path / "in", "alice", [GOOD])
    path.write_text('{"memories": [', encoding="utf-8")
    (error,) = (await archive.import_path(tmp_path / "in", owner="alice")).errors
    assert "invalid JSON" in error

    _memory_file(tmp_path / "in", "alice", [GOOD] + [{**GOOD, "id": i} for i in range(2, 60)])
    small = ImportLimits(max_file_bytes=1024, max_zip_bytes=10**6, max_zip_members=100)
    (error,) = (await archive.import_path(tmp_path / "in", owner="alice", limits=small)).errors
    assert "over the 1,024-byte limit" in error
    assert await archive.memories.listing("alice", statuses=ALL) == []


async def test_a_file_for_another_owner_writes_nothing_anywhere(archive, tmp_path) -> None:
    await _seed(archive)
    bob_before = _shape(await archive.memories.listing("bob", statuses=ALL))
    _memory_file(tmp_path / "in", "bob", [{**GOOD, "text": "Bob hates tea"}])

    (error,) = (await archive.import_path(tmp_path / "in", owner="mallory")).errors

    assert "this import is for owner 'mallory'" in error
    assert _shape(await archive.memories.listing("bob", statuses=ALL)) == bob_before
    assert await archive.memories.listing("mallory", statuses=ALL) == []


@pytest.mark.parametrize("owner", ["", "_", "alice", "a b/c", ".hidden", "日本", "100%"])
def test_owner_file_names_round_trip(owner) -> None:
    name = file_name(owner)
    assert "/" not in name and not name.startswith(".")
    assert owner_of(name) == owner


async def test_a_temporary_conversation_stays_temporary(archive, tmp_path) -> None:
    conv = await archive.memory.create_conversation(agent_id="assistant", temporary=True)
    plain = await seed_conversation(archive)
    out = tmp_path / "out"
    await archive.export_all(out)
    meta = out / "agents" / "assistant" / "conversations" / conv.uuid / "meta.json"
    assert json.loads(meta.read_text(encoding="utf-8"))["temporary"] is True
    plain_meta = next(out.rglob(f"{plain.uuid}/meta.json"))
    assert "temporary" not in json.loads(plain_meta.read_text(encoding="utf-8"))
    await archive.memory.delete(conv)

    await archive.import_path(out)

    assert (await archive.lookup.get_conversation(conv.uuid)).temporary is True
    assert (await archive.lookup.get_conversation(plain.uuid)).temporary is False
