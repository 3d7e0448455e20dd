"""Recall per turn in a long conversation (#31): what auto-recall costs each turn.

    python bench/recall_turns.py [--messages 10000] [--turns 20] [--db sqlite|postgresql|mariadb]

A throw-away migrated database holding one conversation of ``--messages`` final messages
(random words, a vector each from the local embedder, wordllama, offline). Then
``--turns`` turns as a run makes them: the accept (question + streaming answer), the recall
auto-recall asks (``Retriever.in_conversation``, the window's 20 rows left out), the final
write, the embedding of the turn's two rows. Per turn: CPU of the whole process (the index
is built on worker threads), CPU of the event loop's thread, wall time.

Anchor, same run, same turns: the same recall by a retriever with nothing cached (a whole
read and a fresh index), which is what every turn paid before #31 kept the index and read
only what changed. Target: at 10,000 messages, a turn's recall costs ≤ 1/5 of the anchor's
CPU and ≤ 20 ms on the event loop's thread.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _app
from _common import Checks, header, parse_args, table
from _servers import database

WORDS = [f"w{i}" for i in range(3000)] + [
    "the",
    "heron",
    "lake",
    "blue",
    "grey",
    "nest",
    "river",
    "tree",
]
QUERY = "blue heron by the lake"


def _options(parser) -> None:
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--db", choices=["sqlite", "postgresql", "mariadb"], default="sqlite")


class Cost:
    """Per call: CPU of all threads, of the calling (event loop's) thread, and wall, in ms."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self.loop: list[float] = []
        self.wall: list[float] = []

    async def measure(self, work):
        t, c, p = time.perf_counter(), time.thread_time(), time.process_time()
        out = await work
        self.wall.append((time.perf_counter() - t) * 1e3)
        self.loop.append((time.thread_time() - c) * 1e3)
        self.cpu.append((time.process_time() - p) * 1e3)
        return out

    def row(self, name: str) -> list[str]:
        def p50(xs: list[float]) -> str:
            return f"{statistics.median(xs):.1f} ({min(xs):.1f}–{max(xs):.1f})"

        return [name, p50(self.cpu), p50(self.loop), p50(self.wall)]


async def run(url: str, args) -> tuple[Cost, Cost]:
    rng = random.Random(7)

    def said() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30)))

    store = _app.Memory(url, None)
    embedder = _app.LocalEmbedder()
    worker = _app.EmbedWorker(store.db, embedder)
    conv = await _app.seed(store.memory, [said() for _ in range(args.messages)])
    started = time.perf_counter()
    await worker.embed_due([conv.id])
    print(f"seeded {args.messages} messages, embedded in {time.perf_counter() - started:.1f} s")
    kept = _app.Retriever(store.db, embedder)
    await kept.in_conversation(conv.id, QUERY)  # the index a conversation's earlier turn left
    lumina, anchor = Cost(), Cost()
    try:
        for _ in range(args.turns):
            conv = await store.memory.queries.get_conversation(conv.uuid)
            turn = await _app.accept(store.memory, conv, said())
            window = range(max(1, conv.last_seq - 18), conv.last_seq + 3)
            ours = await lumina.measure(kept.in_conversation(conv.id, QUERY, exclude_seqs=window))
            cold = _app.Retriever(store.db, embedder)
            theirs = await anchor.measure(cold.in_conversation(conv.id, QUERY, exclude_seqs=window))
            assert ours == theirs, "the kept index ranked differently from a fresh one"
            await _app.finish(store.memory, turn, said())
            await worker.embed_due([], {conv.id: {turn.user.turn_id}})
    finally:
        await store.close()
    return lumina, anchor


def main() -> None:
    args = parse_args(__doc__, _options, {"messages": 1000, "turns": 5})
    header("recall_turns.py", args, "local embedder (wordllama)")
    with tempfile.TemporaryDirectory() as tmp, database(args.db, Path(tmp)) as url:
        lumina, anchor = asyncio.run(run(url, args))
    print()
    print(table(
        ["per turn, p50 (min–max) ms", "CPU, all threads", "event loop's thread", "wall"],
        [lumina.row("Lumina: kept index, what changed read"),
         anchor.row("anchor: nothing kept, whole read")],
    ))  # fmt: skip
    ratio = statistics.median(lumina.cpu) / statistics.median(anchor.cpu)
    print(f"\nCPU ratio Lumina / anchor: {ratio:.3f}")
    checks = Checks()
    checks.add(ratio <= 0.2, f"a turn's recall CPU ≤ 1/5 of a whole rebuild ({ratio:.3f})")
    loop = statistics.median(lumina.loop)
    checks.add(loop <= 20, f"≤ 20 ms on the event loop's thread per turn ({loop:.1f} ms)")
    checks.print()


if __name__ == "__main__":
    sys.exit(main())
