"""Export → wipe → import gives the same conversation back, on SQLite, MariaDB, PostgreSQL."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from lumina_app.domain import ConversationNotFound, ConversationStatus, ImportOutcome
from tests.archive.conftest import T0, TURNS, add_turns, message_view, seed_conversation


async def _wipe(archive, conv) -> None:
    """Delete from SQL only (memory.delete would also remove the archive folder)."""
    await archive.memory.cold.delete_conversation(conv.id)
    with pytest.raises(ConversationNotFound):
        await archive.memory.queries.get_conversation(conv.uuid)


async def _exported_one_turn(archive, tmp_path: Path):
    conv = await seed_conversation(archive, turns=TURNS[:1])
    await archive.export_all(tmp_path / "export")
    return conv, tmp_path / "export" / "agents" / "demo" / "conversations" / conv.uuid


async def test_export_wipe_import_gives_identical_messages(archive, tmp_path: Path) -> None:
    original = await seed_conversation(archive)
    before = await archive.memory.queries.page_messages(original.id, limit=100)
    root = tmp_path / "export"

    report = await archive.export_all(root)
    assert (report.conversations, report.messages) == (1, 8)
    await _wipe(archive, original)

    imported = await archive.import_path(root)
    assert imported.errors == []
    assert [i.outcome for i in imported.items] == [ImportOutcome.CREATED]
    conv = await archive.memory.queries.get_conversation(original.uuid)
    after = await archive.memory.queries.page_messages(conv.id, limit=100)
    assert message_view(after) == message_view(before)
    assert (conv.title, conv.agent_id, conv.status) == (
        "测试 · archive",
        "demo",
        ConversationStatus.COMPLETED,
    )
    assert (conv.message_count, conv.last_seq) == (8, 8)
    for field in ("created_at", "updated_at"):
        got, want = getattr(conv, field), getattr(original, field)
        assert got.isoformat(timespec="milliseconds") == want.isoformat(timespec="milliseconds")

    # The re-imported conversation exports to the very same bytes.
    again = tmp_path / "again"
    await archive.export_all(again)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        assert (again / path.relative_to(root)).read_bytes() == path.read_bytes(), path


async def test_importing_twice_creates_nothing_new(archive, tmp_path: Path) -> None:
    conv = await seed_conversation(archive)
    await archive.export_all(tmp_path / "export")
    await _wipe(archive, conv)

    first = await archive.import_path(tmp_path / "export")
    second = await archive.import_path(tmp_path / "export")
    assert [i.outcome for i in first.items] == [ImportOutcome.CREATED]
    assert [(i.outcome, i.added) for i in second.items] == [(ImportOutcome.UNCHANGED, 0)]
    conversations, _ = await archive.memory.queries.list_conversations(limit=10)
    assert len(conversations) == 1
    stored = await archive.memory.queries.page_messages(conversations[0].id, limit=100)
    assert [m.seq for m in stored] == list(range(1, 9))


async def test_an_archive_with_more_messages_appends_the_missing_ones(
    archive, tmp_path: Path
) -> None:
    conv = await seed_conversation(archive, turns=TURNS[:1])
    await archive.export_all(tmp_path / "short")
    await add_turns(archive, conv, TURNS[1:], start=T0 + timedelta(minutes=5))
    conv = await archive.memory.queries.get_conversation(conv.uuid)
    full = await archive.memory.queries.page_messages(conv.id, limit=100)
    await archive.export_all(tmp_path / "long")
    await _wipe(archive, conv)

    await archive.import_path(tmp_path / "short")
    report = await archive.import_path(tmp_path / "long")
    assert [(i.outcome, i.added) for i in report.items] == [(ImportOutcome.APPENDED, 6)]
    stored = await archive.memory.queries.get_conversation(conv.uuid)
    assert (stored.message_count, stored.last_seq) == (8, 8)
    assert message_view(await archive.memory.queries.page_messages(stored.id, limit=100)) == (
        message_view(full)
    )
    # The hot window notices SQL moved on and rebuilds: the new messages are in context.
    window = await archive.memory.load(stored)
    assert [m.content for m in window][-1] == full[-1].content


async def test_a_diverging_archive_is_refused_and_changes_nothing(
    sqlite_archive, tmp_path: Path
) -> None:
    archive = sqlite_archive
    conv, folder = await _exported_one_turn(archive, tmp_path)
    history = json.loads((folder / "history.json").read_text(encoding="utf-8"))
    history[0]["messageId"] = "msg-someone-else"
    history.append({"role": "user", "content": "more", "messageId": "msg-x", "timestamp": None})
    (folder / "history.json").write_text(json.dumps(history), encoding="utf-8")

    report = await archive.import_path(folder)
    (error,) = report.errors
    assert "differs at message 1" in error and str(folder) in error
    stored = await archive.memory.queries.get_conversation(conv.uuid)
    assert stored.message_count == 2


async def test_another_agents_conversation_with_the_same_id_is_refused(
    sqlite_archive, tmp_path: Path
) -> None:
    archive = sqlite_archive
    _, folder = await _exported_one_turn(archive, tmp_path)
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    meta["agentId"] = "other"
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")

    (error,) = (await archive.import_path(folder)).errors
    assert "already exists under agent 'demo'" in error


async def test_a_streaming_answer_is_not_exported(sqlite_archive, tmp_path: Path) -> None:
    from lumina_app.domain import Msg, RunRecord

    archive = sqlite_archive
    conv = await seed_conversation(archive, turns=TURNS[:1])
    run = RunRecord("run-1", conv.id, "demo", "", "resume", "demo", "demo")
    await archive.memory.begin_turn(conv, Msg.user("q", turn_id="t2"), Msg.assistant(""), run)
    document = await archive.document(await archive.memory.queries.get_conversation(conv.uuid))
    assert [e["content"] for e in document["history"]] == ["你好", TURNS[0][1][1], "q"]
    assert document["meta"]["stats"]["messageCount"] == 3
