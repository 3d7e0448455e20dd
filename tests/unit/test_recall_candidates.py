"""Recall's candidates across conversations (``storage/sql/recall_candidates.py``): each
query word's window is its newest matches, on every backend. On PostgreSQL the words read
backwards by id share one read, and a word that read leaves short is read again alone:
the windows must be exactly what each word's own read finds."""

from __future__ import annotations

import pytest

from lumina_app.memory import MemoryManager
from lumina_app.storage.sql import recall_candidates
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase
from tests.conftest import SHARED_REDIS_URL
from tests.turns import store_turn
from tests.unit.test_memory import redis_window

WINDOW = 4


def question(i: int) -> str:
    """Every question says "alpha"; one in seven "beta"; only the fourth "gamma"."""
    return f"alpha note {i}" + (" beta" if i % 7 == 0 else "") + (" gamma" if i == 3 else "")


async def test_each_word_gets_its_newest_matches(engine, redis_prefix, monkeypatch) -> None:
    hot = redis_window(SHARED_REDIS_URL, redis_prefix)
    memory = MemoryManager(
        SQLColdStore(db := SQLDatabase(engine)), hot, window=20, queries=ConversationQueries(db)
    )
    shared: list[list[list[int] | None]] = []
    read_together = recall_candidates._shared_backward

    async def recorded(*args, **kwargs):
        shared.append(await read_together(*args, **kwargs))
        return shared[-1]

    monkeypatch.setattr(recall_candidates, "_shared_backward", recorded)
    try:
        conversation = await memory.create_conversation(agent_id="a", owner="alice")
        asked = []
        for i in range(30):
            user, _ = await store_turn(memory, conversation, question(i), f"ok {i}")
            asked.append(user)
        other = await memory.create_conversation(agent_id="a", owner="bob")
        await store_turn(memory, other, "alpha beta gamma, said by someone else", "ok")
        windows = await recall_candidates.newest_matches(
            memory.cold.db, ["alpha", "beta", "gamma"], owner="alice", window=WINDOW
        )
    finally:
        await hot.close()

    def newest(word: str) -> list[int]:
        return sorted((m.id for m in asked if word in m.content), reverse=True)[:WINDOW]

    assert windows == [newest("alpha"), newest("beta"), newest("gamma")]
    assert len(windows[1]) == WINDOW and len(windows[2]) == 1
    if engine.dialect.name == "postgresql":
        # The shared read stopped at 3 x 4 rows: "alpha" full, "beta" and "gamma" short.
        assert shared and shared[0][0] is not None and None in shared[0], shared
    else:
        assert shared == []


@pytest.mark.parametrize("words", [["alpha"], ["nothing", "else"]])
async def test_a_lone_word_and_words_found_nowhere(engine, redis_prefix, words) -> None:
    """Every match when fewer than the window; nothing (not an error) for unknown words."""
    hot = redis_window(SHARED_REDIS_URL, redis_prefix)
    memory = MemoryManager(
        SQLColdStore(db := SQLDatabase(engine)), hot, window=20, queries=ConversationQueries(db)
    )
    try:
        conversation = await memory.create_conversation(agent_id="a", owner="alice")
        for i in range(3):
            await store_turn(memory, conversation, question(i), f"ok {i}")
        windows = await recall_candidates.newest_matches(
            memory.cold.db, words, owner="alice", window=WINDOW
        )
    finally:
        await hot.close()
    assert [len(w) for w in windows] == ([3] if words == ["alpha"] else [0, 0])
