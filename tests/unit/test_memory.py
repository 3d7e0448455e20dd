"""MemoryManager over real Redis (and the in-process window): write order, trim, rebuild."""

import asyncio
import json

import pytest
import redis
import sqlalchemy as sa

from lumina_app.domain import ConversationInfo, ConversationStatus, MessageStatus, Msg
from lumina_app.memory import MemoryManager
from lumina_app.storage.local.hot_window import LocalHotWindow
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker
from lumina_app.storage.redis.client import create_redis_client
from lumina_app.storage.redis.hot_window import RedisHotWindow
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase
from tests.conftest import SHARED_REDIS_URL, forget_prefix
from tests.turns import accept_turn, finish_turn, store_turn


def redis_window(url: str, prefix: str, window: int = 20) -> RedisHotWindow:
    return RedisHotWindow(
        create_redis_client(url, socket_timeout=0.25),
        prefix=prefix,
        window=window,
        ttl_seconds=600,
        breaker=CircuitBreaker(cooldown=0.2),
    )


@pytest.fixture
async def memory(engine, redis_prefix):
    hot = redis_window(SHARED_REDIS_URL, redis_prefix)
    yield MemoryManager(
        SQLColdStore(db := SQLDatabase(engine)), hot, window=20, queries=ConversationQueries(db)
    )
    await hot.close()


async def add_turns(memory: MemoryManager, conv, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        await store_turn(memory, conv, f"q{i}", f"a{i}")


async def sql_tail(memory: MemoryManager, conv, n: int) -> list[tuple[int, str, str]]:
    rows = await memory.queries.page_messages(conv.id, limit=n)
    return [(m.seq, m.role.value, m.content) for m in rows]


def shape(msgs) -> list[tuple[int, str, str]]:
    return [(m.seq, m.role.value, m.content) for m in msgs]


async def fresh(memory: MemoryManager, conv):
    return await memory.queries.get_conversation(conv.uuid)


async def test_window_trims_to_the_last_twenty(memory: MemoryManager) -> None:
    conv = await memory.create_conversation(agent_id="a")
    await add_turns(memory, conv, 15)
    loaded = await memory.load(await fresh(memory, conv))
    assert shape(loaded) == await sql_tail(memory, conv, 20)
    assert [m.content for m in loaded[:2]] == ["q5", "a5"]
    raw = redis.Redis.from_url(SHARED_REDIS_URL).lrange(memory.hot.keys(conv.uuid)[0], 0, -1)
    assert len(raw) == 20
    assert memory.stats.hits == 1 and memory.stats.rebuilds == 0


async def test_window_trims_to_a_configured_n(engine, redis_prefix) -> None:
    hot = redis_window(SHARED_REDIS_URL, redis_prefix, window=7)
    memory = MemoryManager(
        SQLColdStore(db := SQLDatabase(engine)), hot, window=7, queries=ConversationQueries(db)
    )
    conv = await memory.create_conversation(agent_id="a")
    await add_turns(memory, conv, 6)
    loaded = await memory.load(await fresh(memory, conv))
    assert shape(loaded) == await sql_tail(memory, conv, 7)
    assert len(await hot.client.lrange(hot.keys(conv.uuid)[0], 0, -1)) == 7
    await hot.close()


async def test_concurrent_writers_leave_hot_equal_to_sql(memory: MemoryManager) -> None:
    conv = await memory.create_conversation(agent_id="a")
    await asyncio.gather(*(store_turn(memory, conv, f"q{i}", f"a{i}") for i in range(50)))
    current = await fresh(memory, conv)
    assert current.last_seq == 100
    stored = await memory.queries.page_messages(conv.id, limit=100)
    assert [m.seq for m in stored] == list(range(1, 101))
    loaded = await memory.load(current)
    assert shape(loaded) == shape(stored[-20:])
    window = await memory.hot.read(conv.uuid)  # whatever Redis holds now is SQL's tail
    assert shape(window.messages) == shape(stored[-20:])


async def test_flushall_then_load_rebuilds_the_last_n_from_sql(
    memory: MemoryManager, redis_prefix
) -> None:
    conv = await memory.create_conversation(agent_id="a")
    await add_turns(memory, conv, 30)
    await forget_prefix(memory.hot.client, redis_prefix)
    loaded = await memory.load(await fresh(memory, conv))
    assert shape(loaded) == await sql_tail(memory, conv, 20)
    assert memory.stats.rebuilds == 1
    again = await memory.load(await fresh(memory, conv))
    assert shape(again) == shape(loaded) and memory.stats.hits == 1


async def test_stale_high_water_mark_means_rebuild_not_empty(memory: MemoryManager) -> None:
    conv = await memory.create_conversation(agent_id="a")
    await add_turns(memory, conv, 3)
    # Simulate writes Redis never saw: SQL moves on while the window stays behind.
    await memory.cold.append_messages(conv.id, [Msg.user("only in sql", turn_id="x")])
    loaded = await memory.load(await fresh(memory, conv))
    assert loaded[-1].content == "only in sql"
    assert shape(loaded) == await sql_tail(memory, conv, 20)


async def test_unicode_round_trips_through_the_hot_window(memory: MemoryManager) -> None:
    text = "你好 👋🏽 — 🇨🇳 e\u0301 \u200d"
    conv = await memory.create_conversation(agent_id="a")
    await store_turn(memory, conv, text, text * 3)
    loaded = await memory.load(await fresh(memory, conv))
    assert [m.content.encode() for m in loaded] == [text.encode(), (text * 3).encode()]
    assert memory.stats.hits == 1


async def test_delete_clears_rows_and_the_hot_key(memory: MemoryManager) -> None:
    conv = await memory.create_conversation(agent_id="a")
    await add_turns(memory, conv, 2)
    await memory.delete(conv)
    assert await memory.hot.client.exists(*memory.hot.keys(conv.uuid)) == 0
    assert await memory.queries.page_messages(conv.id) == []


# SQL statements of one follow-up turn's accept + final write (question and streaming
# answer in one INSERT, the run, the final answer): PostgreSQL folds each phase into one.
TURN_STATEMENTS = {"sqlite": 6, "mysql": 7, "postgresql": 2}


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts packed sends to Redis: one per round trip (a pipeline sends once)."""
    from redis.asyncio.connection import AbstractConnection

    sent: list[int] = []
    original = AbstractConnection.send_packed_command

    async def counting(self, command, check_health=True):
        sent.append(1)
        return await original(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counting)
    return sent


async def test_a_turn_is_two_transactions_and_one_redis_round_trip(
    engine, redis_server, round_trips
) -> None:
    hot = redis_window(redis_server.url, "lumina")
    memory = MemoryManager(
        SQLColdStore(db := SQLDatabase(engine)), hot, window=20, queries=ConversationQueries(db)
    )
    conv = await memory.create_conversation(agent_id="a")
    await add_turns(memory, conv, 1)  # the script is now cached server-side
    commits: list[int] = []
    statements: list[str] = []

    def on_commit(_conn) -> None:
        commits.append(1)

    def on_statement(_conn, _cursor, statement: str, *_rest) -> None:
        statements.append(statement)

    store = memory.cold
    listeners = [("commit", on_commit), ("before_cursor_execute", on_statement)]
    for sync_engine in store.db.engines:
        for name, listener in listeners:
            sa.event.listen(sync_engine, name, listener)
    before, sent_before = _commands(redis_server), len(round_trips)
    await add_turns(memory, conv, 1, start=1)
    after, sent = _commands(redis_server), len(round_trips) - sent_before
    for sync_engine in store.db.engines:
        for name, listener in listeners:
            sa.event.remove(sync_engine, name, listener)
    # The accept (question + streaming answer + run record), then the final answer write:
    # one commit each; the question waits for the answer, one EVALSHA pushes both.
    assert len(commits) == 2
    assert sent == 1
    # What a turn's write costs is mostly its statements (#31): one more shows here.
    budget = TURN_STATEMENTS[engine.dialect.name]
    assert len(statements) <= budget, "\n".join(statements)
    assert after["evalsha"] - before.get("evalsha", 0) == 1
    loaded = await memory.load(await fresh(memory, conv))
    assert [m.content for m in loaded] == ["q0", "a0", "q1", "a1"]
    assert memory.stats.hits == 1 and memory.stats.rebuilds == 0
    await hot.close()


@pytest.fixture(params=["redis", "memory"])
async def tiered(request, engine, redis_prefix):
    """A MemoryManager over each hot tier: the Redis window and the in-process one."""
    if request.param == "redis":
        hot = redis_window(SHARED_REDIS_URL, redis_prefix)
    else:
        hot = LocalHotWindow(window=20, max_conversations=10)
    yield MemoryManager(
        SQLColdStore(db := SQLDatabase(engine)), hot, window=20, queries=ConversationQueries(db)
    )
    await hot.close()


async def test_a_read_during_a_run_then_the_final_write_leave_the_window_whole(
    tiered: MemoryManager,
) -> None:
    """The question is windowed with its answer: a read while the answer streams rebuilds
    from SQL (as it always did: SQL counts the streaming row), and the final push then
    adds only what the rebuilt window lacks — no second rebuild, nothing twice."""
    memory = tiered
    conv = await memory.create_conversation(agent_id="a")
    await add_turns(memory, conv, 2)
    _user, answer, record = await accept_turn(memory, conv, "q2")
    during = await memory.load(await fresh(memory, conv))
    assert [m.content for m in during] == ["q0", "a0", "q1", "a1", "q2"]
    assert memory.stats.rebuilds == 1
    assert await finish_turn(memory, conv, answer, record, "a2")
    current = await fresh(memory, conv)
    loaded = await memory.load(current)
    assert shape(loaded) == await sql_tail(memory, conv, 20)
    assert [m.content for m in loaded][-2:] == ["q2", "a2"]
    assert memory.stats.rebuilds == 1 and memory.stats.hits == 1


async def test_a_new_conversations_first_turn_starts_its_window_at_the_final_write(
    tiered: MemoryManager,
) -> None:
    memory = tiered
    hot = memory.hot
    conv = ConversationInfo.new(agent_id="a", title="t")
    _user, answer, record = await accept_turn(memory, conv, "first")
    assert await hot.read(conv.uuid) is None  # nothing windowed before the answer is final
    assert await finish_turn(memory, conv, answer, record, "reply")
    window = await hot.read(conv.uuid)
    assert [m.content for m in window.messages] == ["first", "reply"]
    assert window.high_water == 2
    loaded = await memory.load(await fresh(memory, conv))
    assert [m.content for m in loaded] == ["first", "reply"] and memory.stats.hits == 1
    assert len(memory._deferred) == 0


async def test_a_fenced_off_final_write_pushes_nothing_and_holds_nothing(
    memory: MemoryManager,
) -> None:
    conv = await memory.create_conversation(agent_id="a")
    await add_turns(memory, conv, 1)
    _user, answer, record = await accept_turn(memory, conv, "q1")
    # a survivor closed the answer meanwhile: the fenced final write is refused
    await memory.cold.update_message(answer.id, content="", status=MessageStatus.INTERRUPTED)
    assert not await finish_turn(memory, conv, answer, record, "late")
    window = await memory.hot.read(conv.uuid)
    assert [m.content for m in window.messages] == ["q0", "a0"]
    assert len(memory._deferred) == 0
    loaded = await memory.load(await fresh(memory, conv))  # behind SQL: rebuilt
    assert [m.content for m in loaded] == ["q0", "a0", "q1", ""]  # closed by the survivor


async def test_hot_read_is_one_round_trip(engine, redis_server, round_trips) -> None:
    hot = redis_window(redis_server.url, "lumina")
    memory = MemoryManager(
        SQLColdStore(db := SQLDatabase(engine)), hot, window=20, queries=ConversationQueries(db)
    )
    conv = await memory.create_conversation(agent_id="a")
    await add_turns(memory, conv, 3)
    current = await fresh(memory, conv)
    before, sent_before = _commands(redis_server), len(round_trips)
    loaded = await memory.load(current)
    after, sent = _commands(redis_server), len(round_trips) - sent_before
    assert len(loaded) == 6 and memory.stats.hits == 1
    assert sent == 1
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    # the window, its high-water mark and its summary slot: one pipelined round trip
    assert {k: v for k, v in delta.items() if v and k != "info"} == {"lrange": 1, "get": 2}
    await hot.close()


def _commands(server) -> dict[str, int]:
    stats = server.client().info("commandstats")
    return {name.removeprefix("cmdstat_"): value["calls"] for name, value in stats.items()}


async def test_in_process_window_has_the_same_behaviour(engine) -> None:
    memory = MemoryManager(
        SQLColdStore(db := SQLDatabase(engine)),
        LocalHotWindow(window=20, max_conversations=2),
        window=20,
        queries=ConversationQueries(db),
    )
    convs = [await memory.create_conversation(agent_id="a") for _ in range(3)]
    for conv in convs:
        await add_turns(memory, conv, 12)
    assert len(memory.hot) == 2  # LRU bound: the first conversation was forgotten
    for conv in convs:
        loaded = await memory.load(await fresh(memory, conv))
        assert shape(loaded) == await sql_tail(memory, conv, 20)
    assert memory.stats.rebuilds >= 1


async def test_conversation_status_follows_turns(memory: MemoryManager) -> None:
    conv = await memory.create_conversation(agent_id="a")
    await store_turn(memory, conv, "q", "a")
    current = await fresh(memory, conv)
    assert (current.status, current.message_count) == (ConversationStatus.COMPLETED, 2)


def test_hot_entries_are_compact_json(memory: MemoryManager) -> None:
    entry = json.loads(json.dumps(Msg.user("x", seq=3, turn_id="t").to_hot()))
    assert Msg.from_hot(entry).seq == 3


async def test_a_window_is_replaced_in_one_round_trip_every_key_expiring(
    redis_server, round_trips
) -> None:
    """Rebuilds and a new conversation's first turn install a window with one script call
    (atomic, as the MULTI/EXEC it replaced): the list, its mark and its summary slot, each
    with the window's TTL; an empty window leaves no list behind."""
    hot = redis_window(redis_server.url, "lumina", window=3)
    msgs = [Msg.user(f"m{i}", turn_id=f"t{i}") for i in range(1, 6)]
    for seq, msg in enumerate(msgs, 1):
        msg.seq = seq
    await hot.replace("c1", [], 0)  # the script is now cached server-side
    sent = len(round_trips)
    await hot.replace("c1", msgs, 5)
    assert len(round_trips) - sent == 1
    window = await hot.read("c1")
    assert [m.content for m in window.messages] == ["m3", "m4", "m5"]
    assert window.high_water == 5 and window.summary is None
    raw = redis.Redis.from_url(redis_server.url)
    keys = hot.keys("c1")
    assert all(0 < raw.ttl(key) <= 600 for key in keys)
    await hot.replace("c1", [], 7)
    assert raw.exists(keys[0]) == 0 and int(raw.get(keys[1])) == 7
    assert (await hot.read("c1")).messages == []
    raw.close()
    await hot.close()
