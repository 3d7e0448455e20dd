"""The long-term memory index taken changes in place (#27): it ranks as one rebuilt from
scratch would, and after a change it reads the changed memories only, also when another
process made the change."""

import random
from dataclasses import replace
from datetime import timedelta

import numpy as np

from lumina_app.domain import utcnow
from lumina_app.domain.memories import Memory, MemoryStatus
from lumina_app.memory.long_term import LongTermMemory
from lumina_app.memory.memory_index import MemoryIndex, thread_terms
from lumina_app.recall import text
from lumina_app.storage.sql import memories as rows
from lumina_app.storage.sql.database import SQLDatabase

WORDS = [
    *("ada", "graph", "database", "lisbon", "tea", "coffee", "cycling", "rust", "jazz"),
    *("piano", "orchid", "chess", "kayak"),
]


def memory(i: int, words: str, *, pinned: bool = False, seconds: int = 0) -> Memory:
    when = utcnow().replace(year=2026) + timedelta(seconds=seconds)
    return Memory(i, "alice", "a", words, MemoryStatus.ACTIVE, pinned, None, None, when, when)


def vector(rng: random.Random) -> bytes:
    values = np.array([rng.uniform(-1, 1) for _ in range(8)], dtype=np.float32)
    return (values / np.linalg.norm(values)).astype(np.float16).tobytes()


def ranking(index: MemoryIndex, query: str, probe: np.ndarray) -> list[tuple[int, float]]:
    return [(m.id, s) for m, s in index.ranked(query, probe, (1.0, 0.1), 0.0)]


def test_changed_in_place_it_ranks_as_a_fresh_build() -> None:
    rng = random.Random(27)
    live: dict[int, tuple[Memory, bytes]] = {}
    index = MemoryIndex()
    next_id = 1
    for step in range(600):
        action = rng.random()
        if action < 0.55 or not live:
            said = " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
            found = (memory(next_id, said, seconds=step), vector(rng))
            live[next_id] = found
            index.put(*found)
            next_id += 1
        elif action < 0.75:
            gone = rng.choice(list(live))
            del live[gone]
            index.drop(gone)
        elif action < 0.9:
            old, vec = live[rng.choice(list(live))]
            said = rng.choice(WORDS)  # the same text keeps its vector, as an edit does
            edited = replace(old, text=said, updated_at=old.updated_at + timedelta(1))
            live[old.id] = (edited, vec if said == old.text else vector(rng))
            index.put(*live[old.id])
        else:
            old, vec = live[rng.choice(list(live))]
            live[old.id] = (replace(old, pinned=not old.pinned), vec)
            index.apply([live[old.id]])
        if step % 50 == 49:
            fresh = MemoryIndex(live.values(), thread_terms)
            assert len(index) == len(fresh) == len(live)
            assert [m.id for m in index.ordered()] == [m.id for m in fresh.ordered()]
            for query in ("ada graph", "tea or coffee", "jazz piano chess", "nothing known"):
                probe = np.frombuffer(vector(rng), dtype=np.float16).astype(np.float32)
                assert ranking(index, query, probe) == ranking(fresh, query, probe)
    assert index.dead < max(len(index), 64) + 1  # compacted along the way


def test_a_superseded_or_deleted_row_leaves_the_index() -> None:
    index = MemoryIndex([(memory(1, "ada likes tea"), None), (memory(2, "ada likes jazz"), None)])
    index.apply([(replace(memory(1, "ada likes tea"), status=MemoryStatus.SUPERSEDED), None)])
    index.apply([(replace(memory(2, "ada likes jazz"), status=MemoryStatus.DELETED), None)])
    assert len(index) == 0
    assert index.ranked("ada", None, (1.0, 0.1), 0.0) == []


def test_thread_terms_are_recalls_terms() -> None:
    said = "Ada prefers the graph databases she worked on in Lisbon"
    assert thread_terms(said) == text.terms(said)


async def test_another_process_change_is_taken_in_by_reading_it_alone(engine, monkeypatch):
    """Two stores on one database stand for two worker processes: what one writes, the
    other's next lookup finds, reading the changed memories rather than the owner's all."""
    here, there = (
        LongTermMemory(SQLDatabase(engine), None),
        LongTermMemory(SQLDatabase(engine), None),
    )
    for i in range(30):
        await there.add("alice", "a", f"note {i} about orchids")
    assert len(await here.for_context("alice", "orchids", agent_id="a", tokens=900, limit=50)) == 30
    full_reads = []
    real = rows.with_vectors

    async def counted(*args, **kwargs):
        full_reads.append(kwargs)
        return await real(*args, **kwargs)

    monkeypatch.setattr(rows, "with_vectors", counted)
    read_again: list[int] = []
    by_ids = rows.with_vectors_by_ids

    async def spied(db, ids, **kwargs):
        read_again.extend(ids)
        return await by_ids(db, ids, **kwargs)

    monkeypatch.setattr(rows, "with_vectors_by_ids", spied)
    cat, _ = await there.add("alice", "a", "my cat is called Tom")
    assert [m.id for m, _ in await here.search("alice", "cat", agent_id="a")] == [cat.id]
    await there.edit("alice", cat.id, text="my cat is called Felix")
    assert [m.text for m, _ in await here.search("alice", "cat", agent_id="a")] == [
        "my cat is called Felix"
    ]
    newer = await there.supersede("alice", cat.id, "my cat Felix is ten", agent_id="a")
    assert [m.id for m, _ in await here.search("alice", "cat", agent_id="a")] == [newer.id]
    await there.forget("alice", newer.id)
    assert await here.search("alice", "cat", agent_id="a") == []
    assert await here.search("alice", "orchids", agent_id="a", limit=50)
    assert full_reads == []  # every change was taken in without reading the owner's all
    assert sorted(set(read_again)) == sorted({cat.id, newer.id})  # only the changed rows
    await there.forget_all("alice", agent_id="a")  # most of them: read whole again
    assert await here.search("alice", "orchids", agent_id="a", limit=50) == []
    assert len(full_reads) == 1
    assert await here.search("bob", "cat", agent_id="a") == []
