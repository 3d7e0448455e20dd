"""Memory benchmark: hot read, a chat turn's writes and the rebuild, next to two anchors.

    python bench/memory.py [--db sqlite|mariadb|postgresql] [--iterations N] [--quick]

A private redis-server and a throw-away migrated database; at 10 and 10,000 stored
messages in one conversation (window N = 20):

* hot read    ``MemoryManager.load(conv)`` with a current window;
* turn write  a chat turn's writes as a run makes them (bench/_app.py): the accept
              (``begin_turn``: question + ``streaming`` answer row + run record in one
              transaction, then the question into the window) and the final write
              (``finish_answer``: fenced answer UPDATE + conversation + run, then the answer
              into the window); also timed apart. *first turn*: ``begin_conversation``
              (the conversation inserted with its first turn) + the final write;
* rebuild     FLUSHALL (untimed), then ``load(conv)``.

Anchors, same Redis server and database, sync, timed outside the event loop:
langchain_community's ``RedisChatMessageHistory`` and ``SQLChatMessageHistory``; read =
``.messages[-20:]``, write = ``add_messages([question, answer])``; they have no rebuild,
their full read stands in (``*``). Counts come from an untimed pass (bench/_probe.py).

LangGraph anchor (bench/_langgraph.py), same database, same run, at each size (default
10, 1,000 and 10,000): a ``StateGraph`` over ``add_messages`` with a no-I/O model node,
``AsyncSqliteSaver`` on the SQLite file or ``AsyncPostgresSaver`` on the PostgreSQL
database, one thread per conversation; per turn ``ainvoke`` (question in, answer out),
each turn forked from the checkpoint holding the ``size`` stored messages, so the history
stays at ``size`` however many turns are timed (Lumina's grows by 2 a turn: flat by
design); last-20 load ``aget_state``; bytes stored per turn = growth of each system's tables and
indexes (SQLite ``dbstat`` pages, PostgreSQL ``pg_total_relation_size``; Lumina counts
conversation, message, run and full-text index) over the timed turns. Beside it Lumina's
production turn (accept + final write) and context load (``load``, hot window) and the
plain SQL anchor's ``add_messages`` from the same run. ``--no-langgraph`` skips it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
import sqlalchemy as sa
from _common import (
    Checks,
    Loop,
    Samples,
    fmt_n,
    fmt_ratio,
    fmt_us,
    header,
    note,
    parse_args,
    table,
    time_async,
    time_sync,
)
from _memory_langgraph import Chat, langgraph_report, langgraph_rows
from _probe import Counts, Probe
from _servers import database, database_version, redis_server
from langchain_community.chat_message_histories import (
    RedisChatMessageHistory,
    SQLChatMessageHistory,
)
from langchain_core.messages import AIMessage, HumanMessage, message_to_dict

from bench import _app

WINDOW = 20
QUESTION = "How do I rotate the API keys for the staging environment without downtime?"
ANSWER = (
    "Create the new key first, deploy it alongside the old one, switch the clients over, "
    "watch the error rate for a while and only then revoke the old key. Keep both valid "
    "for at least one full deploy cycle so nothing that is mid-rollout loses access."
)
READ, TURN, ACCEPT, FINAL, FIRST, REBUILD = (
    "hot read (last 20)",
    "turn write",
    "  accept",
    "  final write",
    "first turn (new conversation)",
    "rebuild after FLUSHALL",
)
TIMED = (READ, TURN, ACCEPT, FINAL, REBUILD)  # per size; FIRST once

HOT_READ_P50_US = 200.0
REBUILD_P50_US = 5000.0
SCALING_MAX = 1.2


@dataclass
class Result:
    samples: Samples
    counts: Counts = field(default_factory=Counts)
    cpu: Samples | None = None  # process CPU per op (time.process_time): load-independent


class CpuClock:
    """Process CPU time per call of an op (every thread: aiosqlite's too), so a loaded
    machine's scheduling delays, which wall time includes, can be told apart."""

    def __init__(self) -> None:
        self.ns: list[int] = []

    def wrap(self, op):
        def timed():
            t0 = time.process_time_ns()
            out = op()
            self.ns.append(time.process_time_ns() - t0)
            return out

        return timed

    def wrap_async(self, op):
        async def timed():
            t0 = time.process_time_ns()
            await op()
            self.ns.append(time.process_time_ns() - t0)

        return timed

    def timed_part(self, loop: Loop, n: int) -> Samples:
        return Samples(self.ns[loop.warmup : loop.warmup + n])


@dataclass
class Plan:
    reads: int
    turns: int
    rebuilds: int
    count_ops: int
    anchor_budget_s: float


def texts(size: int) -> list[str]:
    return [QUESTION if i % 2 == 0 else ANSWER for i in range(size)]


# -- Lumina --------------------------------------------------------------------------------


class Lumina:
    def __init__(self, sync_url: str, redis_url: str, admin: redis.Redis) -> None:
        """Inside the running event loop."""
        self.store = _app.Memory(sync_url, redis_url, window=WINDOW)
        self.memory = self.store.memory
        self.admin = admin

    def probe(self) -> Probe:
        return Probe(self.store.engines, self.admin)

    async def fill(self, size: int) -> _app.ConversationInfo:
        conv = await _app.seed(self.memory, texts(size), title=f"bench {size}")
        assert conv.message_count == size, conv
        await self.memory.rebuild(conv)
        return conv

    async def reads(self, conv, plan: Plan, out: dict[str, Result], count: bool = True) -> None:
        memory, stats = self.memory, self.memory.stats
        op = lambda: memory.load(conv)  # noqa: E731
        hits, loop = stats.hits, Loop(plan.reads, min(200, plan.reads))
        out[READ] = Result(await time_async(op, loop))
        assert stats.hits - hits == loop.warmup + out[READ].samples.n, f"a read missed: {stats}"
        flush = self.admin.flushall
        rebuilds, loop = stats.rebuilds, Loop(plan.rebuilds, min(10, plan.rebuilds))
        out[REBUILD] = Result(await time_async(op, loop, before=flush))
        assert stats.rebuilds - rebuilds == loop.warmup + out[REBUILD].samples.n, stats
        if count:
            with self.probe() as probe:
                for _ in range(plan.count_ops):
                    with probe.into(out[READ].counts):
                        await op()
                for _ in range(plan.count_ops):
                    flush()
                    with probe.into(out[REBUILD].counts):
                        await op()
        assert len(await memory.load(conv)) == min(WINDOW, conv.message_count)

    async def turns(self, conv, plan: Plan, out: dict[str, Result], first: bool = False) -> None:
        """Turn writes into ``conv`` (``first``: each into a new conversation)."""
        memory = self.memory
        split: list[tuple[int, int]] = []
        clock = time.perf_counter_ns

        async def turn(probe: Probe | None = None) -> None:
            target = _app.new_conversation() if first else conv
            t0 = clock()
            if probe is None:
                t = await _app.accept(memory, target, QUESTION)
                t1 = clock()
                await _app.finish(memory, t, ANSWER)
                split.append((t1 - t0, clock() - t1))
                return
            with probe.into(out[TURN].counts):
                with probe.into(out[ACCEPT].counts):
                    t = await _app.accept(memory, target, QUESTION)
                with probe.into(out[FINAL].counts):
                    await _app.finish(memory, t, ANSWER)

        rebuilds, warm = memory.stats.rebuilds, min(20, plan.turns)
        key = FIRST if first else TURN
        cpu, loop = CpuClock(), Loop(plan.turns, warm)
        wall = await time_async(cpu.wrap_async(turn), loop)
        out[key] = Result(wall, cpu=cpu.timed_part(loop, wall.n))
        split = split[warm:]
        out[ACCEPT] = Result(Samples([a for a, _ in split]))
        out[FINAL] = Result(Samples([f for _, f in split]))
        if first:
            out[TURN] = out[FIRST]
        with self.probe() as probe:
            for _ in range(plan.count_ops):
                await turn(probe)
        assert memory.stats.rebuilds == rebuilds, "a turn write found the window broken"
        assert memory.stats.fallbacks == 0, f"the hot tier fell back to SQL: {memory.stats}"
        if not first:  # the window followed every write
            fresh = await self.store.reads.lookup.get_conversation(conv.uuid)
            hits = memory.stats.hits
            loaded = await memory.load(fresh)
            assert memory.stats.hits == hits + 1 and loaded[-1].seq == fresh.last_seq

    async def run(self, size: int, plan: Plan) -> dict[str, Result]:
        conv = await self.fill(size)
        out: dict[str, Result] = {}
        await self.reads(conv, plan, out)
        await self.turns(conv, plan, out)  # last: the conversation grows here
        return out

    async def first_turns(self, plan: Plan) -> dict[str, Result]:
        out: dict[str, Result] = {}
        await self.turns(None, plan, out, first=True)
        return {FIRST: out[FIRST], ACCEPT: out[ACCEPT], FINAL: out[FINAL]}

    async def control(self, plan: Plan) -> dict[str, Result]:
        """Read and rebuild at a full window of 20 stored messages, timing only: at 10
        the window holds 10, so 10,000 vs 10 also compares payloads."""
        out: dict[str, Result] = {}
        await self.reads(await self.fill(WINDOW), plan, out, count=False)
        return out

    async def close(self) -> None:
        await self.store.close()


# -- anchors -------------------------------------------------------------------------------


def pair() -> list:
    return [HumanMessage(QUESTION), AIMessage(ANSWER)]


def redis_anchor(redis_url: str):
    hist = RedisChatMessageHistory(session_id="s", url=redis_url, key_prefix="anchor:")

    def fill(size: int) -> None:  # the JSON and LPUSH order the class writes itself
        pipe = hist.redis_client.pipeline(transaction=False)
        for i in range(size):
            msg = HumanMessage(QUESTION) if i % 2 == 0 else AIMessage(ANSWER)
            pipe.lpush(hist.key, json.dumps(message_to_dict(msg)))
        pipe.execute()

    return hist, fill


def sql_anchor(engine: sa.Engine):
    hist = SQLChatMessageHistory(
        session_id="s", connection=engine, table_name="anchor_message_store"
    )

    def fill(size: int) -> None:
        for start in range(0, size, 1000):
            hist.add_messages(
                [
                    HumanMessage(QUESTION) if i % 2 == 0 else AIMessage(ANSWER)
                    for i in range(start, min(size, start + 1000))
                ]
            )

    return hist, fill


def run_anchor(hist, fill, size: int, plan: Plan, probe: Probe) -> dict[str, Result]:
    """Reads, then writes (which grow the history); at size 0 a new session per write."""

    def new_session() -> None:
        hist.session_id = f"s{size}-{secrets.token_hex(4)}"

    new_session()
    fill(size)
    assert len(hist.messages) == size
    budget, out = plan.anchor_budget_s, {}
    read = lambda: hist.messages[-WINDOW:]  # noqa: E731
    write = lambda: hist.add_messages(pair())  # noqa: E731
    if size:
        out[READ] = Result(time_sync(read, Loop(plan.reads, 3 if size >= 1000 else 100, budget)))
        out[REBUILD] = out[READ]  # no rebuild: the full read stands in
    before = None if size else new_session
    key = TURN if size else FIRST
    cpu, loop = CpuClock(), Loop(plan.turns, min(20, plan.turns), budget)
    wall = time_sync(cpu.wrap(write), loop, before)
    out[key] = Result(wall, cpu=cpu.timed_part(loop, wall.n))
    with probe:
        for _ in range(min(plan.count_ops, 5) if size else 0):
            with probe.into(out[READ].counts):
                read()
        for _ in range(plan.count_ops):
            if before:
                before()
            with probe.into(out[key].counts):
                write()
    return out


def anchor_engine(sync_url: str) -> sa.Engine:
    """The anchor's sync engine on the same database, with Lumina's SQLite pragmas."""
    engine = sa.create_engine(sync_url)
    if engine.dialect.name == "sqlite":

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record) -> None:
            cur = dbapi_connection.cursor()
            for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=10000"):
                cur.execute(f"PRAGMA {pragma}")
            cur.close()

    return engine


# -- report --------------------------------------------------------------------------------


def report(sizes, lumina, anchors, control) -> Checks:
    def pp(r: Result, star: str = "") -> str:
        return f"{fmt_us(r.samples.p50)} / {fmt_us(r.samples.p99)}{star}"

    keyed = [(op, s) for op in TIMED for s in sizes] + [(FIRST, 0), (ACCEPT, 0), (FINAL, 0)]
    rows, counts = [], []
    for op, size in keyed:
        lum = lumina[size][op]
        label = f"{op} (first turn)" if size == 0 and op != FIRST else op
        c = lum.counts
        cells = [label, f"{size:,}" if size else "new", pp(lum)]
        ar, asq = (anchors[name].get(size, {}).get(op) for name in ("redis", "sql"))
        if ar and asq:
            star = "*" if op == REBUILD else ""
            ratios = [fmt_ratio(a.samples.p50 / lum.samples.p50) for a in (ar, asq)]
            cells += [pp(ar, star), pp(asq, star), " / ".join(ratios)]
        else:
            cells += ["", "", ""]
        rows.append([*cells, f"{fmt_n(c.stmts)} ({fmt_n(c.txns)} txn)", fmt_n(c.rt)])
        counts.append([label, cells[1], "lumina", fmt_n(c.rt), c.redis_detail(), c.sql_detail()])
    for name in ("redis", "sql"):
        for size in sizes:
            for op in (READ, TURN):
                c = anchors[name][size][op].counts
                row = [op, f"{size:,}", f"anchor({name})", fmt_n(c.rt), c.redis_detail()]
                counts.append([*row, c.sql_detail()])
    print("\nLatency in microseconds, p50 / p99 (* the anchors' full read: no rebuild).\n")
    heads = ["operation", "stored", "lumina", "anchor(redis)", "anchor(sql)"]
    heads += ["anchor/lumina p50 redis / sql", "sql stmts/op", "redis round trips/op"]
    print(table(heads, rows))
    print("\nWhat one operation sends (untimed pass; Lua's inner commands included):\n")
    heads = ["operation", "stored", "system", "round trips", "redis commands", "sql statements"]
    print(table(heads, counts))
    print("\nTurn write, process CPU per turn in microseconds, p50 / p99 (wall in the table):\n")
    cpu_rows = []
    for size in [*sizes, 0]:
        op = TURN if size else FIRST
        lum, asq = lumina[size][op].cpu, anchors["sql"][size][op].cpu
        ratio = fmt_ratio(lum.p50 / asq.p50)
        wall = fmt_ratio(lumina[size][op].samples.p50 / anchors["sql"][size][op].samples.p50)
        row = [op, f"{size:,}" if size else "new", f"{fmt_us(lum.p50)} / {fmt_us(lum.p99)}"]
        cpu_rows.append([*row, f"{fmt_us(asq.p50)} / {fmt_us(asq.p99)}", ratio, wall])
    heads = ["operation", "stored", "lumina cpu", "anchor(sql) cpu", "cpu lumina/anchor"]
    print(table([*heads, "wall lumina/anchor"], cpu_rows))

    checks = Checks()
    small, large = sizes[0], sizes[-1]
    for size in sizes:
        r = lumina[size][READ]
        checks.add(
            r.samples.p50 <= HOT_READ_P50_US and r.counts.rt == 1,
            f"hot read p50 <= {HOT_READ_P50_US:.0f} us in 1 round trip at {size:,}: "
            f"{fmt_us(r.samples.p50)} us, {fmt_n(r.counts.rt)} round trip",
        )
    for size in [*sizes, 0]:
        a, f = lumina[size][ACCEPT].counts, lumina[size][FINAL].counts
        what = "first turn" if size == 0 else f"turn at {size:,}"
        checks.add(
            (a.txns, a.rt, f.txns, f.rt) == (1, 1, 1, 1),
            f"{what}: accept and final write = 1 SQL transaction + 1 Redis round trip each: "
            f"accept {a.summary()}; final {f.summary()}",
        )
    for size in sizes:
        r = lumina[size][REBUILD].samples
        checks.add(
            r.p50 <= REBUILD_P50_US,
            f"rebuild p50 <= {REBUILD_P50_US / 1000:.0f} ms at {size:,}: {fmt_us(r.p50)} us",
        )
    bases = {TURN: lumina[small][TURN]} | ({READ: control[READ], REBUILD: control[REBUILD]})
    for op, base in bases.items():
        ratio = lumina[large][op].samples.p50 / base.samples.p50
        at = small if op == TURN else WINDOW
        checks.add(
            ratio <= SCALING_MAX,
            f"{op}: p50 at {large:,} stored <= {SCALING_MAX}x p50 at {at} stored: "
            f"{fmt_ratio(ratio)}",
        )
    for op, size in [(op, s) for op in (READ, TURN, REBUILD) for s in sizes] + [(FIRST, 0)]:
        lum = lumina[size][op].samples.p50
        ar, asq = (anchors[n][size][op].samples.p50 for n in ("redis", "sql"))
        checks.add(
            lum < ar and lum < asq,
            f"{op} {f'at {size:,} ' if size else ''}faster than both anchors (p50): "
            f"lumina {fmt_us(lum)}, "
            f"redis {fmt_us(ar)}, sql {fmt_us(asq)} us",
        )
    return checks


# -- main ----------------------------------------------------------------------------------


def options(parser) -> None:
    parser.add_argument("--db", choices=["sqlite", "mariadb", "postgresql"], default="sqlite")
    parser.add_argument(
        "--iterations", type=int, default=2000, help="hot reads; turns N/4, rebuilds N/10"
    )
    parser.add_argument("--sizes", default="10,1000,10000", help="stored messages, comma-separated")
    parser.add_argument("--count-ops", type=int, default=20, help="operations counted per row")
    parser.add_argument("--anchor-budget", type=float, default=3.0, help="s per anchor row")
    parser.add_argument(
        "--langgraph-budget", type=float, default=12.0, help="s per LangGraph row (n >= 10)"
    )
    parser.add_argument("--no-langgraph", action="store_true", help="skip the LangGraph anchor")


async def measure(sync_url, redis_url, admin, sizes, plan, anchors, probe) -> tuple:
    """At each size Lumina, then the anchors (sync: they block the loop while they run);
    the control right after the largest size; then the first turns."""
    results: dict[int, dict[str, Result]] = {}
    anchor_res: dict[str, dict[int, dict[str, Result]]] = {name: {} for name in anchors}
    lumina = Lumina(sync_url, redis_url, admin)
    try:
        for size in [*sizes, 0]:
            t0 = time.perf_counter()
            results[size] = await (lumina.run(size, plan) if size else lumina.first_turns(plan))
            if size == sizes[-1]:
                control = await lumina.control(plan)
            t1 = time.perf_counter()
            for name, (hist, fill) in anchors.items():
                anchor_res[name][size] = run_anchor(hist, fill, size, plan, probe())
            t2 = time.perf_counter()
            note(f"{size:,} stored: lumina {t1 - t0:.1f} s, anchors {t2 - t1:.1f} s")
    finally:
        await lumina.close()
    return results, anchor_res, control


def main(argv: list[str] | None = None) -> int:
    args = parse_args(
        __doc__,
        options,
        {
            "iterations": 100,
            "sizes": "10,1000",
            "count_ops": 5,
            "anchor_budget": 0.5,
            "langgraph_budget": 1.0,
        },
        argv,
    )
    sizes = sorted(int(s) for s in args.sizes.split(","))
    n = max(args.iterations, 10)
    plan = Plan(n, max(n // 4, 10), max(n // 10, 10), args.count_ops, args.anchor_budget)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="lumina-bench-") as tmp,
        redis_server(Path(tmp)) as redis_url,
        database(args.db, Path(tmp)) as sync_url,
    ):
        admin = redis.Redis.from_url(redis_url)
        versions = (
            f"SQLAlchemy {sa.__version__}, redis-py {redis.__version__}, redis-server "
            f"{admin.info('server')['redis_version']}, {database_version(sync_url)}"
        )
        header("memory.py", args, versions)
        print(
            f"plan per size: {plan.reads} hot reads, {plan.turns} turn writes, "
            f"{plan.rebuilds} rebuilds after warm-up; anchors stop after "
            f"{plan.anchor_budget_s:g} s per row (n >= 20); window N = {WINDOW}"
        )
        engine = anchor_engine(sync_url)
        anchors = {"redis": redis_anchor(redis_url), "sql": sql_anchor(engine)}
        probe = lambda: Probe([engine], admin)  # noqa: E731
        results, anchor_res, control = asyncio.run(
            measure(sync_url, redis_url, admin, sizes, plan, anchors, probe)
        )
        graph = None
        if not args.no_langgraph and args.db != "mariadb":  # no LangGraph saver for it
            chat = Chat(WINDOW, QUESTION, ANSWER, texts)
            graph = asyncio.run(
                langgraph_rows(sync_url, redis_url, sizes, plan.turns, args.langgraph_budget, chat)
            )
        anchors["redis"][0].redis_client.close()
        engine.dispose()
        admin.close()
    checks = report(sizes, results, anchor_res, control)
    if graph is not None:
        lumina_turn = {size: results[size][TURN].samples for size in sizes}
        sql_turn = {size: anchor_res["sql"][size][TURN].samples for size in sizes}
        langgraph_report(sizes, graph, lumina_turn, sql_turn, checks, SCALING_MAX)
    checks.print()
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
