"""A tree written by another system in the seed's layout (conv-…, msg-xxx-aaa, Chinese)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from lumina_app.domain import ConversationStatus, ImportOutcome, MsgRole
from tests.archive.conftest import SEED_CONV


async def test_the_seed_tree_imports_with_its_ids_and_text(archive, seed_tree: Path) -> None:
    report = await archive.import_path(seed_tree)
    assert report.errors == []
    assert sorted((i.conversation_uuid, i.outcome, i.added) for i in report.items) == [
        ("conv-mn3112l3", ImportOutcome.CREATED, 4),
        ("conv-partial01", ImportOutcome.CREATED, 4),
    ]
    conv = await archive.memory.queries.get_conversation("conv-mn3112l3")
    assert (conv.agent_id, conv.title, conv.status) == (
        "innovator-001",
        "创建 Master Agent",
        ConversationStatus.COMPLETED,
    )
    assert conv.tool_call_count == 2 and conv.message_count == 4
    assert conv.created_at.isoformat(timespec="milliseconds") == "2026-03-23T10:12:11.993+00:00"
    assert conv.updated_at.isoformat(timespec="milliseconds") == "2026-03-23T10:12:50.078+00:00"
    msgs = await archive.memory.queries.page_messages(conv.id)
    assert [(m.role, m.turn_id) for m in msgs] == [
        (MsgRole.USER, "msg-xxx-aaa"),
        (MsgRole.ASSISTANT, "msg-xxx-aaa"),
        (MsgRole.USER, "msg-xxx-bbb"),
        (MsgRole.ASSISTANT, "msg-xxx-bbb"),
    ]
    assert msgs[1].content == "你好,我是 Innovator,LemonBoss 的元 Agent。"
    assert msgs[0].created_at.isoformat(timespec="milliseconds") == "2026-03-23T10:12:11.994+00:00"

    again = await archive.import_path(seed_tree)
    assert {i.outcome for i in again.items} == {ImportOutcome.UNCHANGED}


async def test_exporting_the_imported_seed_gives_back_its_bytes(
    sqlite_archive, seed_tree: Path, tmp_path: Path
) -> None:
    await sqlite_archive.import_path(seed_tree / "agents" / "innovator-001")
    conv = await sqlite_archive.memory.queries.get_conversation("conv-mn3112l3")
    out = tmp_path / "out"
    await sqlite_archive.export_conversation(conv, out)
    exported = out / "agents" / "innovator-001" / "conversations" / "conv-mn3112l3"
    written = sorted(str(p.relative_to(exported)) for p in exported.rglob("*") if p.is_file())
    original = sorted(str(p.relative_to(SEED_CONV)) for p in SEED_CONV.rglob("*") if p.is_file())
    assert written == original
    for name in original:
        assert (exported / name).read_bytes() == (SEED_CONV / name).read_bytes(), name


async def test_missing_fields_are_filled_predictably(sqlite_archive, seed_tree: Path) -> None:
    folder = seed_tree / "agents" / "innovator-001" / "conversations" / "conv-partial01"
    await sqlite_archive.import_path(folder)  # a single conversation folder
    conv = await sqlite_archive.memory.queries.get_conversation("conv-partial01")
    # agentId from the path, no title, idle as stated, updatedAt = the last message's.
    assert (conv.agent_id, conv.title, conv.status) == ("innovator-001", "", "idle")
    assert conv.updated_at.isoformat(timespec="milliseconds") == "2026-03-24T08:01:02.500+00:00"
    assert conv.tool_call_count == 0
    msgs = await sqlite_archive.memory.queries.page_messages(conv.id)
    assert [m.turn_id for m in msgs] == ["turn-1", "turn-1", "msg-xxx-ccc", "msg-xxx-ccc"]
    stamps = [m.created_at.isoformat(timespec="milliseconds")[11:23] for m in msgs]
    # A missing timestamp takes the previous message's.
    assert stamps == ["08:00:01.250", "08:00:01.250", "08:01:00.000", "08:01:02.500"]


async def test_a_zip_of_the_tree_imports_too(sqlite_archive, seed_tree: Path, tmp_path) -> None:
    zipped = shutil.make_archive(str(tmp_path / "seed"), "zip", seed_tree)
    report = await sqlite_archive.import_path(Path(zipped))
    assert report.errors == [] and report.count(ImportOutcome.CREATED) == 2

    broken = tmp_path / "broken.zip"
    broken.write_bytes(Path(zipped).read_bytes()[:-30])  # noqa: ASYNC240 - test setup
    (error,) = (await sqlite_archive.import_path(broken)).errors
    assert str(broken) in error


async def test_a_bad_file_inside_a_zip_is_named_by_its_place_in_the_zip(
    sqlite_archive, seed_tree: Path, tmp_path: Path
) -> None:
    history = seed_tree / "agents/innovator-001/conversations/conv-partial01/history.json"
    history.write_text(json.dumps([{"role": "user"}]), encoding="utf-8")
    zipped = Path(shutil.make_archive(str(tmp_path / "seed"), "zip", seed_tree))
    (error,) = (await sqlite_archive.import_path(zipped)).errors
    assert error.startswith(
        f"{zipped}/agents/innovator-001/conversations/conv-partial01/history.json: entry 0"
    )
