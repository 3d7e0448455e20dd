"""The SQL cold store on SQLite, MariaDB and PostgreSQL."""

import asyncio
from datetime import UTC

import pytest

from lumina_app.domain import (
    ConversationNotFound,
    ConversationStatus,
    InvalidInput,
    MessageStatus,
    Msg,
    MsgRole,
    new_turn_id,
)
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.runs import RunStore

TRICKY = "你好，世界 👋🏽 — 🇨🇳 e\u0301 \u200d 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \\ ' \" %_"


async def test_conversation_lifecycle(engine) -> None:
    store = SQLColdStore(SQLDatabase(engine))
    conv = await store.create_conversation(agent_id="assistant", title="First", owner="alice")
    assert len(conv.uuid) == 36
    got = await ConversationQueries(store.db).get_conversation(conv.uuid)
    assert (got.title, got.agent_id, got.status) == ("First", "assistant", ConversationStatus.IDLE)
    assert got.created_at.tzinfo is UTC or got.created_at.utcoffset().total_seconds() == 0

    await store.update_conversation(conv.id, title="Renamed")
    assert (await ConversationQueries(store.db).get_conversation(conv.uuid)).title == "Renamed"
    # A compare and set (a proposed title): only while the title is still the one expected.
    assert not await store.retitle(conv.uuid, "Model's", replacing="First")
    assert (await ConversationQueries(store.db).get_conversation(conv.uuid)).title == "Renamed"
    assert await store.retitle(conv.uuid, "Model's", replacing="Renamed")
    assert (await ConversationQueries(store.db).get_conversation(conv.uuid)).title == "Model's"
    await store.update_conversation(conv.id, title="Renamed")

    with pytest.raises(ConversationNotFound):
        await ConversationQueries(store.db).get_conversation(conv.uuid, owner="bob")
    with pytest.raises(ConversationNotFound):
        await ConversationQueries(store.db).get_conversation(conv.uuid, agent_id="other-agent")

    await store.append_messages(conv.id, [Msg.user("hi", turn_id=new_turn_id())])
    await store.delete_conversation(conv.id)
    with pytest.raises(ConversationNotFound):
        await ConversationQueries(store.db).get_conversation(conv.uuid)
    assert await ConversationQueries(store.db).page_messages(conv.id) == []


async def test_timestamps_are_aware_utc_with_microseconds(engine) -> None:
    store = SQLColdStore(SQLDatabase(engine))
    conv = await store.create_conversation(agent_id="a")
    stamps = []
    for i in range(5):
        (m,) = await store.append_messages(conv.id, [Msg.user(f"m{i}", turn_id="t")])
        stamps.append(m.created_at)
    stored = await ConversationQueries(store.db).page_messages(conv.id)
    assert [m.created_at for m in stored] == stamps
    assert all(m.created_at.utcoffset().total_seconds() == 0 for m in stored)
    assert any(m.created_at.microsecond % 1000 for m in stored)


async def test_unicode_round_trips_byte_identical(engine) -> None:
    store = SQLColdStore(SQLDatabase(engine))
    conv = await store.create_conversation(agent_id="a", title=TRICKY[:40])
    big = TRICKY * 5000  # ~200 KB: past MySQL's 64 KiB TEXT
    await store.append_messages(
        conv.id, [Msg.user(TRICKY, turn_id="t"), Msg.assistant(big, turn_id="t")]
    )
    first, second = await ConversationQueries(store.db).page_messages(conv.id)
    assert first.content.encode() == TRICKY.encode()
    assert second.content.encode() == big.encode()
    assert (await ConversationQueries(store.db).get_conversation(conv.uuid)).title == TRICKY[:40]


async def test_fifty_concurrent_writers_get_gapless_increasing_seqs(engine) -> None:
    store = SQLColdStore(SQLDatabase(engine))
    conv = await store.create_conversation(agent_id="a")

    async def writer(i: int) -> int:
        (m,) = await store.append_messages(conv.id, [Msg.user(f"w{i}", turn_id=f"t{i}")])
        return m.seq

    seqs = await asyncio.gather(*(writer(i) for i in range(50)))
    assert sorted(seqs) == list(range(1, 51))
    stored = await ConversationQueries(store.db).page_messages(conv.id, limit=100)
    assert [m.seq for m in stored] == list(range(1, 51))
    after = await ConversationQueries(store.db).get_conversation(conv.uuid)
    assert (after.last_seq, after.message_count) == (50, 50)


async def test_list_is_newest_first_and_paginates_with_a_cursor(engine) -> None:
    store = SQLColdStore(SQLDatabase(engine))
    made = [await store.create_conversation(agent_id="a", title=f"c{i}") for i in range(7)]
    await store.create_conversation(agent_id="b", title="other agent")
    await store.create_conversation(agent_id="a", title="other owner", owner="bob")
    seen, cursor = [], None
    while True:
        page, cursor = await ConversationQueries(store.db).list_conversations(
            agent_id="a", owner="", limit=3, cursor=cursor
        )
        seen.extend(c.title for c in page)
        if cursor is None:
            break
    assert seen == [c.title for c in reversed(made)]
    with pytest.raises(InvalidInput):
        await ConversationQueries(store.db).list_conversations(cursor="%%%not-a-cursor")


async def test_search_matches_titles_and_message_text(engine) -> None:
    store = SQLColdStore(SQLDatabase(engine))
    by_title = await store.create_conversation(agent_id="a", title="Paris trip")
    by_text = await store.create_conversation(agent_id="a", title="misc")
    await store.create_conversation(agent_id="a", title="unrelated")
    await store.append_messages(by_text.id, [Msg.user("best cafés in PARIS?", turn_id="t")])
    found, _ = await ConversationQueries(store.db).list_conversations(agent_id="a", search="paris")
    assert {c.uuid for c in found} == {by_title.uuid, by_text.uuid}
    none, _ = await ConversationQueries(store.db).list_conversations(agent_id="a", search="100%")
    assert none == []


async def test_last_messages_skip_streaming_rows(engine) -> None:
    store = SQLColdStore(SQLDatabase(engine))
    conv = await store.create_conversation(agent_id="a")
    for i in range(30):
        await store.append_messages(conv.id, [Msg.user(f"q{i}", turn_id=f"t{i}")])
    await store.append_messages(
        conv.id, [Msg(MsgRole.ASSISTANT, "partial", turn_id="t29", status=MessageStatus.STREAMING)]
    )
    last = await store.last_messages(conv.id, 20)
    assert [m.content for m in last] == [f"q{i}" for i in range(10, 30)]


async def test_crash_sweep_marks_streaming_interrupted(engine) -> None:
    db = SQLDatabase(engine)
    store = SQLColdStore(db)
    conv = await store.create_conversation(agent_id="a")
    _, answer = await store.append_messages(
        conv.id,
        [
            Msg.user("q", turn_id="t"),
            Msg(MsgRole.ASSISTANT, "half an ans", turn_id="t", status=MessageStatus.STREAMING),
        ],
        status=ConversationStatus.RUNNING,
    )
    assert await RunStore(db).close_streaming() == 1
    stored = await ConversationQueries(store.db).get_message(answer.id)
    assert (stored.status, stored.content) == (MessageStatus.INTERRUPTED, "half an ans")
    assert (
        await ConversationQueries(store.db).get_conversation(conv.uuid)
    ).status != ConversationStatus.RUNNING
