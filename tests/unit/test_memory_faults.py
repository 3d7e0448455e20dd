"""Redis killed, paused and flushed: saves succeed, loads answer from SQL fast, window heals."""

import asyncio
import time

import pytest

from lumina_app.memory import MemoryManager
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase
from tests.turns import store_turn
from tests.unit.test_memory import redis_window, shape, sql_tail

pytestmark = pytest.mark.slow


@pytest.fixture
async def memory(engine, redis_server):
    hot = redis_window(redis_server.url, "lumina")
    yield MemoryManager(
        SQLColdStore(db := SQLDatabase(engine)), hot, window=20, queries=ConversationQueries(db)
    )
    await hot.close()


async def turn(memory: MemoryManager, conv, i: int) -> None:
    await store_turn(memory, conv, f"q{i}", f"a{i}")


async def timed_load(memory: MemoryManager, conv) -> tuple[list, float]:
    started = time.perf_counter()
    loaded = await memory.load(await memory.queries.get_conversation(conv.uuid))
    return loaded, time.perf_counter() - started


@pytest.mark.parametrize("fault", ["kill", "pause"])
async def test_saves_survive_and_loads_come_from_sql(memory, redis_server, fault: str) -> None:
    conv = await memory.create_conversation(agent_id="a")
    for i in range(12):
        await turn(memory, conv, i)

    redis_server.kill() if fault == "kill" else redis_server.pause()
    for i in range(12, 18):
        await turn(memory, conv, i)  # must not raise: SQL is the record
        loaded, seconds = await timed_load(memory, conv)
        assert seconds < 1.0, f"load took {seconds:.2f}s with redis {fault}ed"
        assert shape(loaded) == await sql_tail(memory, conv, 20)
    assert memory.stats.fallbacks > 0
    assert await memory.hot_status() == "degraded"

    if fault == "kill":
        redis_server.start()  # same port, empty: like a restart without persistence
    else:
        redis_server.resume()
    await asyncio.sleep(0.25)  # the point: past the 0.2 s cool-down, the next call probes
    await turn(memory, conv, 18)
    loaded, _ = await timed_load(memory, conv)
    assert shape(loaded) == await sql_tail(memory, conv, 20)
    window = await memory.hot.read(conv.uuid)
    assert window is not None and shape(window.messages) == await sql_tail(memory, conv, 20)
    assert await memory.hot_status() == "ok"
    assert (await memory.queries.get_conversation(conv.uuid)).message_count == 38


async def test_flushall_mid_conversation_loses_nothing(memory, redis_server) -> None:
    conv = await memory.create_conversation(agent_id="a")
    for i in range(25):
        await turn(memory, conv, i)
        if i % 7 == 3:
            redis_server.client().flushall()
        loaded, _ = await timed_load(memory, conv)
        assert shape(loaded) == await sql_tail(memory, conv, 20)
