"""Property test: any interleaving of saves, loads, Redis flushes and restarts, and deletes
keeps ``hot == sql[-N:]`` and ``sql count == acknowledged`` (real Redis, real SQLite)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from lumina_app.domain import MessageStatus
from lumina_app.memory import MemoryManager
from lumina_app.settings import load_settings
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker
from lumina_app.storage.redis.client import create_redis_client
from lumina_app.storage.redis.hot_window import RedisHotWindow
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.engine import create_engine
from tests.turns import store_turn

pytestmark = pytest.mark.slow
WINDOW = 6


def shape(msgs) -> list[tuple[int, str, str]]:
    return [(m.seq, m.role.value, m.content) for m in msgs]


@pytest.fixture
def machine_env(sqlite_database, redis_server):
    return sqlite_database, redis_server


def test_memory_state_machine(machine_env) -> None:
    database, server = machine_env

    class MemoryMachine(RuleBasedStateMachine):
        @initialize()
        def setup(self) -> None:
            database.truncate()
            server.client().flushall()
            self.loop = asyncio.new_event_loop()
            self.sql = create_engine(load_settings(database_url=database.url).async_database_url)
            self.hot = RedisHotWindow(
                create_redis_client(server.url, socket_timeout=0.2),
                prefix="sm",
                window=WINDOW,
                ttl_seconds=600,
                breaker=CircuitBreaker(cooldown=0.0),
            )
            self.memory = MemoryManager(
                SQLColdStore(db := SQLDatabase(self.sql)),
                self.hot,
                window=WINDOW,
                queries=ConversationQueries(db),
            )
            self.conversations: list = []
            self.acknowledged: dict[str, int] = {}
            self.counter = 0
            for _ in range(2):
                self.create()

        def run(self, coro):
            return self.loop.run_until_complete(coro)

        def teardown(self) -> None:
            if server.proc.poll() is not None:
                server.start()
            self.run(self.hot.close())
            self.run(self.sql.dispose())
            self.loop.close()

        def create(self) -> None:
            conv = self.run(self.memory.create_conversation(agent_id="a"))
            self.conversations.append(conv)
            self.acknowledged[conv.uuid] = 0

        @rule(index=st.integers(0, 1), turn=st.booleans(), count=st.integers(1, 4))
        def save(self, index: int, turn: bool, count: int) -> None:
            for _ in range(count):
                self.save_one(self.conversations[index], turn)

        def save_one(self, conv, turn: bool) -> None:
            self.counter += 1
            # A finished answer, or one cut short with nothing said (it still takes a seq).
            answer, status = (
                (f"a{self.counter}", MessageStatus.COMPLETE)
                if turn
                else ("", MessageStatus.INTERRUPTED)
            )
            self.run(store_turn(self.memory, conv, f"q{self.counter}", answer, status=status))
            self.acknowledged[conv.uuid] += 2

        @rule(index=st.integers(0, 1))
        def load(self, index: int) -> None:
            conv = self.conversations[index]
            fresh = self.run(self.memory.queries.get_conversation(conv.uuid))
            loaded = self.run(self.memory.load(fresh))
            tail = self.run(self.memory.queries.page_messages(conv.id, limit=WINDOW))
            assert shape(loaded) == shape(tail)

        @rule()
        def flush_redis(self) -> None:
            if server.proc.poll() is None:
                server.client().flushall()

        @rule()
        def restart_redis(self) -> None:
            server.kill()
            server.start()

        @rule(down=st.booleans())
        def kill_or_start_redis(self, down: bool) -> None:
            if down:
                server.kill()
            elif server.proc.poll() is not None:
                server.start()

        @rule(index=st.integers(0, 1))
        def delete(self, index: int) -> None:
            conv = self.conversations.pop(index)
            self.run(self.memory.delete(conv))
            del self.acknowledged[conv.uuid]
            assert self.run(self.memory.queries.page_messages(conv.id)) == []
            self.create()

        @invariant()
        def sql_count_equals_acknowledged(self) -> None:
            for conv in getattr(self, "conversations", []):
                stored = self.run(self.memory.queries.page_messages(conv.id, limit=1000))
                assert len(stored) == self.acknowledged[conv.uuid]
                assert [m.seq for m in stored] == list(range(1, len(stored) + 1))

        @invariant()
        def a_current_window_equals_the_sql_tail(self) -> None:
            if server.proc is None or server.proc.poll() is not None:
                return
            for conv in getattr(self, "conversations", []):
                fresh = self.run(self.memory.queries.get_conversation(conv.uuid))
                try:
                    window = self.run(self.hot.read(conv.uuid))
                except Exception:
                    continue
                if window is None or window.high_water < fresh.last_seq:
                    continue  # missing or stale: the next load rebuilds it
                tail = self.run(self.memory.queries.page_messages(conv.id, limit=WINDOW))
                assert shape(window.messages) == shape(tail)

    MemoryMachine.TestCase.settings = settings(
        max_examples=20,
        stateful_step_count=40,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    MemoryMachine.TestCase().runTest()
