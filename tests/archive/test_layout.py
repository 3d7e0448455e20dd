"""The files on disk, read back with nothing but ``json`` and line splitting."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from lumina_app.archive import format as files
from lumina_app.archive import writer
from lumina_app.domain.access import is_conversation_id
from tests.archive.conftest import TURNS, seed_conversation

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


async def test_meta_history_and_logs_have_the_seed_shapes(sqlite_archive, tmp_path: Path) -> None:
    conv = await seed_conversation(sqlite_archive)
    await sqlite_archive.export_all(tmp_path)
    folder = tmp_path / "agents" / "demo" / "conversations" / conv.uuid

    meta_bytes = (folder / "meta.json").read_bytes()
    meta = json.loads(meta_bytes.decode("utf-8"))
    assert list(meta) == [
        "conversationId",
        "agentId",
        "title",
        "createdAt",
        "updatedAt",
        "status",
        "stats",
    ]
    assert meta["conversationId"] == conv.uuid and meta["agentId"] == "demo"
    assert meta["title"] == "测试 · archive" and meta["status"] == "completed"
    assert meta["stats"] == {"messageCount": 8, "toolCallCount": 0}
    assert ISO_MS.match(meta["createdAt"]) and ISO_MS.match(meta["updatedAt"])
    assert meta["createdAt"] == "2026-03-23T10:12:11.993Z"
    # UTF-8 as is (not \u-escaped), indent 2, one trailing newline.
    assert "测试".encode() in meta_bytes
    assert meta_bytes == (json.dumps(meta, ensure_ascii=False, indent=2) + "\n").encode()

    history = json.loads((folder / "history.json").read_text(encoding="utf-8"))
    flat = [(role, text) for turn in TURNS for role, text in turn]
    assert [(e["role"], e["content"]) for e in history] == flat
    assert all(list(e) == ["role", "content", "messageId", "timestamp"] for e in history)
    assert all(ISO_MS.match(e["timestamp"]) for e in history)
    assert [e["timestamp"] for e in history] == sorted(e["timestamp"] for e in history)
    turn_ids = list(dict.fromkeys(e["messageId"] for e in history))
    assert len(turn_ids) == len(TURNS)

    entries = {p.name for p in folder.iterdir()}
    assert entries == {"meta.json", "history.json", *turn_ids}  # no temp files left
    for turn_id in turn_ids:
        assert [p.name for p in (folder / turn_id).iterdir()] == ["messages.log"]


async def test_messages_log_line_by_line(sqlite_archive, tmp_path: Path) -> None:
    conv = await seed_conversation(sqlite_archive)
    await sqlite_archive.export_all(tmp_path)
    folder = tmp_path / "agents" / "demo" / "conversations" / conv.uuid
    history = json.loads((folder / "history.json").read_text(encoding="utf-8"))

    first = history[0]["messageId"]
    lines = (folder / first / "messages.log").read_text(encoding="utf-8").split("\n")
    assert lines == [
        f"[{history[0]['timestamp']}] [USER]",
        "你好",
        "",
        f"[{history[1]['timestamp']}] [AGENT]",
        "你好,我是 Innovator。",
        "",
        "有什么可以帮你?",
        "",  # the file ends with a newline
    ]
    second = [e for e in history if e["messageId"] == history[2]["messageId"]]
    lines = (folder / second[0]["messageId"] / "messages.log").read_text("utf-8").split("\n")
    assert lines == [
        f"[{second[0]['timestamp']}] [USER]",
        "Line one",
        "line two 👋🏽",
        "",
        f"[{second[1]['timestamp']}] [TOOL]",
        '{"ok": true}',
        "",
        f"[{second[2]['timestamp']}] [AGENT]",
        "Done.",
        "",
    ]
    third = history[5]["messageId"]
    log = (folder / third / "messages.log").read_text(encoding="utf-8")
    assert log.split("\n")[0].endswith("] [SYSTEM]")
    assert log.endswith("] [AGENT]\n\n")  # an empty answer still has its block


def test_atomic_write_keeps_the_old_file_when_the_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "meta.json"
    writer.write_atomic(target, b"old")

    def failing_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        writer.write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]


async def test_re_export_replaces_files_in_place(sqlite_archive, tmp_path: Path) -> None:
    conv = await seed_conversation(sqlite_archive, turns=TURNS[:1])
    await sqlite_archive.export_all(tmp_path)
    await sqlite_archive.memory.rename(conv, "renamed")
    await sqlite_archive.export_all(tmp_path)
    meta = tmp_path / "agents" / "demo" / "conversations" / conv.uuid / "meta.json"
    assert json.loads(meta.read_text(encoding="utf-8"))["title"] == "renamed"


def test_ids_that_cannot_be_folder_names_are_refused() -> None:
    for bad in ("..", ".hidden", "a/b", "a\\b", "", "x" * 200, "con v", "conv-x\n", "\nconv"):
        assert not files.is_safe_name(bad), repr(bad)
    with pytest.raises(files.ArchiveError, match="cannot be used as a folder name"):
        files.conversation_relpath("demo", "../escape")
    assert files.is_safe_name("conv-mn3112l3") and files.is_safe_name("msg-xxx-aaa")


async def test_an_id_with_a_trailing_newline_is_refused(sqlite_archive, tmp_path: Path) -> None:
    """``$`` matches before a final newline: the id check must cover the whole string."""
    with pytest.raises(files.ArchiveError, match="cannot be used as a folder name"):
        files.conversation_relpath("demo", "conv-x\n")
    assert not is_conversation_id("conv-x\n")
    folder = tmp_path / "agents" / "demo" / "conversations" / "conv-x"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"conversationId": "conv-x\n"}), "utf-8")
    (folder / "history.json").write_text("[]", encoding="utf-8")
    (error,) = (await sqlite_archive.import_path(tmp_path)).errors
    assert error.startswith(f"{folder / 'meta.json'}: 'conversationId' must be 1-36 letters")
