"""What an import may change in a conversation that already exists (SQLite, MariaDB,
PostgreSQL): only its own owner's (another owner's uuid gets one of its own), never a
running one, and never backwards in time."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from lumina_app.domain import ConversationStatus, ImportOutcome, InvalidInput
from lumina_app.domain.views import iso_ms
from tests.archive.conftest import TURNS, seed_conversation


async def _longer_archive(archive, tmp_path: Path, **meta_changes: object):
    """A one-turn conversation in SQL, and its export with one more turn and ``meta_changes``."""
    conv = await seed_conversation(archive, turns=TURNS[:1])
    await archive.export_all(tmp_path)
    folder = tmp_path / "agents" / "demo" / "conversations" / conv.uuid
    history = json.loads((folder / "history.json").read_text(encoding="utf-8"))
    stamp = history[-1]["timestamp"]
    history += [
        {"role": "user", "content": "more?", "messageId": "msg-more", "timestamp": stamp},
        {"role": "assistant", "content": "more.", "messageId": "msg-more", "timestamp": stamp},
    ]
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    meta.update(meta_changes)
    (folder / "history.json").write_text(json.dumps(history), encoding="utf-8")
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return conv, folder


async def test_an_older_archive_appends_but_moves_nothing_back(archive, tmp_path: Path) -> None:
    stored = await seed_conversation(archive, turns=TURNS[:1])
    older = iso_ms(stored.updated_at - timedelta(days=30))
    conv, folder = await _longer_archive(archive, tmp_path, updatedAt=older, status="failed")

    report = await archive.import_path(folder)

    assert [(i.outcome, i.added) for i in report.items] == [(ImportOutcome.APPENDED, 2)]
    after = await archive.memory.queries.get_conversation(conv.uuid)
    assert after.message_count == conv.message_count + 2
    assert (after.status, after.updated_at) == (conv.status, conv.updated_at)


async def test_a_newer_archive_brings_its_status_and_updated_at(archive, tmp_path: Path) -> None:
    conv, folder = await _longer_archive(archive, tmp_path)
    newer = conv.updated_at + timedelta(minutes=5)
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    meta.update(updatedAt=iso_ms(newer), status="failed")
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")

    report = await archive.import_path(folder)

    assert [(i.outcome, i.added) for i in report.items] == [(ImportOutcome.APPENDED, 2)]
    after = await archive.memory.queries.get_conversation(conv.uuid)
    assert after.status is ConversationStatus.FAILED
    assert iso_ms(after.updated_at) == iso_ms(newer)


async def test_another_owners_uuid_gets_a_uuid_of_its_own(archive, tmp_path: Path) -> None:
    """An import never lands on someone else's conversation (nor on its agent files, keyed
    by owner and uuid): it gets a uuid derived from the owner and the archive's, so the
    same import again is idempotent; the first owner's conversation is unchanged."""
    conv, folder = await _longer_archive(archive, tmp_path)  # the loopback owner's ("")
    before = await archive.memory.queries.page_messages(conv.id, limit=100)

    (item,) = (await archive.import_path(folder, owner="bob")).items
    (again,) = (await archive.import_path(folder, owner="bob")).items

    assert item.error is None and item.outcome is ImportOutcome.CREATED
    assert item.conversation_uuid != conv.uuid
    assert (again.conversation_uuid, again.outcome) == (
        item.conversation_uuid,
        ImportOutcome.UNCHANGED,
    )
    copy = await archive.memory.queries.get_conversation(item.conversation_uuid, owner="bob")
    assert copy.message_count == conv.message_count + 2
    assert await archive.memory.queries.get_conversation(conv.uuid) == conv
    assert await archive.memory.queries.page_messages(conv.id, limit=100) == before


async def test_a_running_conversation_is_not_appended_to(archive, tmp_path: Path) -> None:
    conv, folder = await _longer_archive(archive, tmp_path)
    await archive.memory.cold.update_conversation(conv.id, status=ConversationStatus.RUNNING)
    running = await archive.memory.queries.get_conversation(conv.uuid)

    (error,) = (await archive.import_path(folder)).errors

    assert error == (
        f"{folder}: conversation {conv.uuid!r} is running: import again once its run has ended"
    )
    assert await archive.memory.queries.get_conversation(conv.uuid) == running


@pytest.mark.parametrize("owner", ["o" * 129, "bob\x1b[2J", "bob\ud800"])
async def test_an_owner_the_column_cannot_hold_is_refused_up_front(
    sqlite_archive, tmp_path: Path, owner: str
) -> None:
    with pytest.raises(InvalidInput, match="owner must be at most 128 printable characters"):
        await sqlite_archive.import_path(tmp_path, owner=owner)
