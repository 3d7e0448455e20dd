"""``python -m lumina_app backup PATH`` on SQLite, taken while answers keep being written:
the copy opens as a database the app serves, holding every message acknowledged before the
backup began and only whole turns; the hot window rebuilds from it by itself (a missing
window, or a high-water mark behind SQL); on another backend the command refuses and names
the right tool."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys

from lumina_app.domain import LOCAL
from tests.api.helpers import messages, say
from tests.conftest import SHARED_REDIS_URL


async def backup(database_url: str, path, **env: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lumina_app", "backup", str(path),
        env={**os.environ, "LUMINA_DATABASE_URL": database_url, "LUMINA_REDIS_URL": "", **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await proc.communicate()
    return proc.returncode, out.decode()


async def test_a_backup_during_writes_restores_every_acknowledged_message(
    api_factory, tmp_path, redis_prefix
) -> None:
    services, client = await api_factory()
    acked: list[tuple[str, str]] = []  # (conversation, question) once its answer returned
    stop, grew = asyncio.Event(), asyncio.Event()

    async def reach(count: int) -> None:
        while len(acked) < count:
            grew.clear()
            await grew.wait()

    async def write() -> None:
        conversation = None
        while not stop.is_set():
            question = f"q-{secrets.token_hex(4)}"
            done = await say(client, question, conversation=conversation, agent="demo")
            conversation = None if len(acked) % 5 == 4 else done["conversationId"]
            acked.append((done["conversationId"], question))
            grew.set()

    writer = asyncio.create_task(write())
    await reach(20)
    before = len(acked)
    target = tmp_path / "backup.db"
    code, out = await backup(services.settings.database_url, target)
    assert code == 0, out
    assert "Backed up" in out
    after = len(acked)
    await reach(after + 5)  # writes went on during and after it
    stop.set()
    await writer
    assert after > before or len(acked) > after

    fresh_prefix = f"{redis_prefix}:restored"
    restored, api = await api_factory(
        database_url=f"sqlite:///{target}", redis_url=SHARED_REDIS_URL, redis_prefix=fresh_prefix
    )
    by_conversation: dict[str, list[str]] = {}
    for conversation, question in acked[:before]:
        by_conversation.setdefault(conversation, []).append(question)
    for conversation, questions in by_conversation.items():
        stored = await messages(api, conversation)
        texts = [m["content"] for m in stored]
        assert all(q in texts for q in questions), (conversation, questions, texts)
        assert len(stored) % 2 == 0  # whole turns: each question with its answer
        for question in questions:  # acknowledged: its answer is there, complete
            assert stored[texts.index(question) + 1]["status"] == "complete"
        # a turn streaming at the backup's moment is closed when the copy is served
        assert {m["status"] for m in stored} <= {"complete", "interrupted"}
    # the restored database is served: a new turn goes on where the copy ends
    conversation = acked[0][0]
    info = await restored.conversations.get(LOCAL, conversation)
    rebuilds = restored.memory.stats.rebuilds
    window = await restored.memory.load(info)  # no window in this Redis: rebuilt from SQL
    assert restored.memory.stats.rebuilds == rebuilds + 1
    assert [m.seq for m in window] == list(range(1, info.last_seq + 1))[-len(window) :]
    # a window behind SQL (a mark older than last_seq) is rebuilt too, not trusted
    await restored.memory.hot.replace(info.uuid, window[:1], window[0].seq)
    again = await restored.memory.load(info)
    assert restored.memory.stats.rebuilds == rebuilds + 2
    assert [m.seq for m in again] == [m.seq for m in window]
    await say(api, "after the restore", conversation=conversation, agent="demo")
    assert (await messages(api, conversation))[-2]["content"] == "after the restore"


async def test_backup_refuses_a_server_database_and_names_its_tool(tmp_path) -> None:
    for url, tool in (
        ("postgresql+psycopg://postgres@127.0.0.1:5432/test", "pg_dump"),
        ("mysql+pymysql://root@127.0.0.1:3306/test", "mariadb-dump"),
    ):
        code, out = await backup(url, tmp_path / "x.db")
        assert code == 2 and tool in out and "OPERATIONS.md" in out, out
        assert not (tmp_path / "x.db").exists()
