"""Long-term memory benchmark (#27): memory lookup for a run's context at 10,000 memories
of one owner, and the demo extractor's cost per turn (off the answer path).

    python bench/memories.py [--memories 10000] [--queries 200] [--quick]

A throw-away SQLite database migrated to head, the local embedder (wordllama, offline).
1. ``LongTermMemory.for_context`` (what every run of an agent with ``memory.longTerm``
   does before it starts: the owner's kept index checked by one aggregate read, ranked by
   BM25 fused with the cosine, cut to the budget) at 100 and at ``--memories`` memories,
   then right after an add, an edit and a forget (each taken into the index in place).
   Anchor, same run: one primary-key read of a memory (``storage/sql/memories.get``).
2. Extraction per turn, demo model (``MemoryExtractor.extract``: read the known memories,
   the demo rules, apply) for a turn with a fact and one without, beside the same anchor.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from _common import Loop, Samples, header, note, parse_args, table, time_async

from lumina_app.agents.after_run.memory_extractor import MemoryExtractor, Turn
from lumina_app.agents.definitions.memory_config import LongTermConfig, MemoryConfig
from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.memory.long_term import LongTermMemory
from lumina_app.recall.embedders import LocalEmbedder
from lumina_app.settings import load_settings
from lumina_app.storage.sql import memories as rows
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.engine import create_engine
from lumina_app.storage.sql.schema_state import alembic_config

TOPICS = ["graph databases", "sourdough", "cycling", "Rust", "jazz piano", "tax returns",
          "orchids", "chess openings", "Lisbon", "kayaks", "compilers", "birdwatching"]  # fmt: skip
QUERIES = ["what's my name?", "which city do I live in?", "what do I work on these days?",
           "any hobbies I mentioned?", "what should I cook tonight?"]  # fmt: skip


class _Providers:
    """The demo model for every agent (the extractor asks it for nothing)."""

    def for_agent(self, _agent):
        return type("Demo", (), {"name": "demo", "model": "demo"})()


def fact(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"The user mentioned {topic} (note {i}) while talking about week {i // 7}."


async def fill(store: LongTermMemory, owner: str, count: int, start: int = 0) -> None:
    texts = [fact(i) for i in range(start, start + count)]
    vectors = await store.embedder.embed(texts)
    for text, vector in zip(texts, vectors, strict=True):
        await rows.insert(store.db, owner=owner, agent_id="assistant", text=text, pinned=False,
                          conversation_uuid=None, seq=None, model=store.model,
                          vector=vector.astype("float16").tobytes())  # fmt: skip


def _lookup(store: LongTermMemory):
    queries = iter(QUERIES * 100_000)

    async def lookup() -> None:
        await store.for_context("alice", next(queries), agent_id="assistant", tokens=500,
                                limit=10)  # fmt: skip

    return lookup


async def after_changes(store: LongTermMemory, loop: Loop) -> dict[str, Samples]:
    """for_context timed right after each kind of change, the change itself untimed (the
    index takes it in: the changed memory is read, not the owner's all)."""
    lookup, out = _lookup(store), {}
    counter = iter(range(10**9))

    async def add() -> int:
        memory, _ = await store.add("alice", "assistant", f"My cat number {next(counter)} is Tom")
        return memory.id

    async def edit() -> None:
        await store.edit("alice", await add(), text=f"My dog number {next(counter)} is Rex")

    async def forget() -> None:
        await store.forget("alice", await add())

    for label, change in (("an add", add), ("an edit", edit), ("a forget", forget)):
        samples = Samples()
        for i in range(loop.warmup + loop.n):
            await change()
            t0 = time.perf_counter_ns()
            await lookup()
            if i >= loop.warmup:
                samples.ns.append(time.perf_counter_ns() - t0)
        out[label] = samples
    return out


def _anchor(db: SQLDatabase, memory_id: int):
    async def anchor() -> None:
        await rows.get(db, memory_id, owner="alice")

    return anchor


async def main(args) -> None:
    from alembic import command

    tmp = Path(tempfile.mkdtemp(prefix="lumina-bench-memories-"))
    url = f"sqlite:///{tmp / 'bench.db'}"
    command.upgrade(alembic_config(url), "head")
    settings = load_settings(database_url=url, data_dir=tmp)
    db = SQLDatabase(create_engine(settings.async_database_url))
    store = LongTermMemory(db, LocalEmbedder())
    await store.embedder.warm()
    loop = Loop(n=args.queries, warmup=5, budget_s=60)
    anchor_id = (await rows.listing(db, owner="x", limit=1) or [None])[0]
    results = []
    done = 0
    for size in (100, args.memories):
        await fill(store, "alice", size - done, done)
        done = size
        if anchor_id is None:
            anchor_id = (await rows.listing(db, owner="alice", limit=1))[0].id
        lookup, anchor = _lookup(store), _anchor(db, anchor_id)
        looked, read = await time_async(lookup, loop), await time_async(anchor, loop)
        results.append((f"for_context, {size:,} memories", looked, read))
    for change, looked in (await after_changes(store, Loop(n=min(args.queries, 100)))).items():
        read = await time_async(_anchor(db, anchor_id), loop)
        results.append((f"for_context after {change}, {args.memories:,}", looked, read))

    agent = AgentDefinition(id="assistant", name="A",
                            memory=MemoryConfig(long_term=LongTermConfig()))  # fmt: skip
    extractor = MemoryExtractor(LongTermMemory(db, store.embedder), _Providers())
    counter = iter(range(10**9))

    async def extract_fact() -> None:
        n = next(counter)
        said = f"I live in Town {n} and I prefer tea number {n}"
        await extractor.extract(Turn(agent, f"owner{n % 50}", "c", 1, said, ""))

    async def extract_nothing() -> None:
        await extractor.extract(Turn(agent, "bob", "c", 1, "how are you today?", ""))

    for label, op in (("extract, a turn with 2 facts", extract_fact),
                      ("extract, a turn with none", extract_nothing)):  # fmt: skip
        ran = await time_async(op, Loop(n=args.queries, warmup=5, budget_s=60))
        results.append((label, ran, await time_async(_anchor(db, anchor_id), loop)))

    print(table(("operation", "n", "p50 ms", "p99 ms", "anchor p50 ms (PK read)", "ratio"),
                [(label, s.n, f"{s.ms(50):.2f}", f"{s.ms(99):.2f}", f"{a.ms(50):.3f}",
                  f"{s.ms(50) / a.ms(50):.0f}x") for label, s, a in results]))  # fmt: skip
    note("for_context runs before each run of an agent with memory.longTerm (on the answer's "
         "path); extraction runs after it, in the background.")  # fmt: skip
    await db.close()


if __name__ == "__main__":
    args = parse_args(
        __doc__,
        lambda p: (p.add_argument("--memories", type=int, default=10_000),
                   p.add_argument("--queries", type=int, default=200)),
        {"memories": 500, "queries": 20},
    )  # fmt: skip
    header("memories.py", args, f"sqlite {__import__('sqlite3').sqlite_version}")
    asyncio.run(main(args))
    sys.exit(0)
