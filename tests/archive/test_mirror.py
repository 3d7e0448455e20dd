"""The live mirror (LUMINA_ARCHIVE_MIRROR): turns land in the archive after a run, off its
path; a failing write is retried and never fails the run; deletes remove the folder."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from lumina_app.archive import writer
from lumina_app.composition import open_services
from lumina_app.domain import LOCAL


@pytest.fixture
async def mirrored(settings_factory):
    services = await open_services(settings_factory(archive_mirror=True))
    services.mirror.retry_initial = 0.05
    yield services
    await services.close()


def conversation_folder(services, uuid: str) -> Path:
    return services.settings.data_dir / "agents" / "demo" / "conversations" / uuid


async def test_each_finished_turn_is_written_to_the_archive(mirrored) -> None:
    first = await mirrored.runs.execute_sync(LOCAL, agent_id="demo", message="你好")
    assert first.status == "complete"
    assert await mirrored.mirror.drain()
    folder = conversation_folder(mirrored, first.conversation_uuid)
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    assert (meta["status"], meta["stats"]["messageCount"]) == ("completed", 2)
    history = json.loads((folder / "history.json").read_text(encoding="utf-8"))
    assert [e["role"] for e in history] == ["user", "assistant"]
    assert history[1]["content"] == first.content
    log = (folder / first.turn_id / "messages.log").read_text(encoding="utf-8")
    assert log.startswith(f"[{history[0]['timestamp']}] [USER]\n你好\n\n")

    second = await mirrored.runs.execute_sync(
        LOCAL, agent_id="demo", message="again", conversation_uuid=first.conversation_uuid
    )
    assert await mirrored.mirror.drain()
    history = json.loads((folder / "history.json").read_text(encoding="utf-8"))
    assert [e["messageId"] for e in history] == [first.turn_id] * 2 + [second.turn_id] * 2
    assert (folder / second.turn_id / "messages.log").is_file()


async def test_a_failed_write_does_not_fail_the_run_and_is_retried(
    mirrored, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_write = writer.write_conversation
    calls = []

    def flaky_write(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise PermissionError("archive folder is read-only")
        return real_write(*args, **kwargs)

    monkeypatch.setattr(writer, "write_conversation", flaky_write)
    result = await mirrored.runs.execute_sync(LOCAL, agent_id="demo", message="hello")
    assert result.status == "complete"
    assert await mirrored.mirror.drain()
    assert len(calls) == 2 and mirrored.mirror.failed == 1
    assert (conversation_folder(mirrored, result.conversation_uuid) / "history.json").is_file()
    warnings = [r for r in caplog.records if r.name == "lumina_app.archive.mirror"]
    assert warnings and warnings[0].levelno == logging.WARNING
    assert "read-only" in warnings[0].getMessage() and "retry in" in warnings[0].getMessage()


async def test_a_slow_archive_does_not_hold_up_the_run(
    mirrored, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real_write = writer.write_conversation

    def stuck_write(*args, **kwargs):
        release.wait(10)
        return real_write(*args, **kwargs)

    monkeypatch.setattr(writer, "write_conversation", stuck_write)
    result = await mirrored.runs.execute_sync(LOCAL, agent_id="demo", message="quick")
    assert result.status == "complete"  # returned while the archive write is blocked
    folder = conversation_folder(mirrored, result.conversation_uuid)
    assert not (folder / "history.json").exists()
    release.set()
    assert await mirrored.mirror.drain()
    assert (folder / "history.json").is_file()


async def test_deleting_a_conversation_removes_its_archive(mirrored) -> None:
    result = await mirrored.runs.execute_sync(LOCAL, agent_id="demo", message="bye")
    assert await mirrored.mirror.drain()
    folder = conversation_folder(mirrored, result.conversation_uuid)
    assert folder.is_dir()
    conv = await mirrored.reads.lookup.get_conversation(result.conversation_uuid)
    await mirrored.memory.delete(conv)
    assert not folder.exists()
    assert await mirrored.mirror.drain()
    assert not folder.exists()  # nothing queued brings it back


async def test_without_the_setting_nothing_is_mirrored(services) -> None:
    assert services.mirror is None
    result = await services.runs.execute_sync(LOCAL, agent_id="demo", message="hi")
    assert not conversation_folder(services, result.conversation_uuid).exists()
