"""Scale benchmark: Lumina's everyday operations over a million stored messages, and full-text
recall against the ``ILIKE`` scan it replaced.

    python bench/scale.py [--db sqlite|postgresql] [--stages 10000,1000000]
                          [--per-conversation 100] [--quick]

A throw-away migrated database and a private redis-server. The store is loaded in stages
(default 10,000 then 1,000,000 messages, 100 per conversation: 10,000 conversations at the
end); after each stage, through Lumina's own code (``MemoryManager``, as the services
call it):

* list page       ``list_conversations(owner, limit=20)``: all agents, one agent, and the
                  next page through the cursor;
* open            ``get_conversation(uuid)`` + ``history(limit=40)`` (the last 40);
* send a turn     the production write path (bench/_app.py: accept + final write, hot
                  window on Redis) into a random stored conversation;
* recall          ``search(words, owner)`` over everything (the UI's and
                  ``GET /api/v1/search``), and inside one conversation (the ``recall`` tool);
                  for a frequent, a middling and a rare word and a two-word query;
* anchor          ``content ILIKE '%word%'`` (LIKE on SQLite: case-blind for ASCII) over the
                  owner's messages, newest first, LIMIT 20: the scan recall replaced;
* bytes           database bytes per stored message (SQLite: file size after a WAL
                  checkpoint; PostgreSQL: ``pg_database_size`` growth over the empty migrated
                  database), beside LangGraph's: one thread grown to ``--per-conversation``
                  messages by ``ainvoke`` turns on the same database (bench/_langgraph.py).

How it is loaded (honestly not how a live service writes it): conversations and messages
are inserted in bulk, ``executemany`` in 20,000-row transactions on SQLite with the
full-text triggers on (the FTS5 index is kept as on a live insert), ``COPY`` on PostgreSQL
with the GIN index dropped before and recreated after (as a restore would), then
``ANALYZE``. Texts are 8-40 words drawn from a Zipf-distributed vocabulary of 5,000
words, so frequent words match a large share of rows and rare ones a handful.
"""

from __future__ import annotations

import asyncio
import bisect
import importlib.util
import itertools
import logging
import random
import sys
import tempfile
import time
import uuid as uuidlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import redis
import sqlalchemy as sa
from _common import (
    ROOT,
    Checks,
    Loop,
    Samples,
    fmt_ratio,
    header,
    note,
    parse_args,
    table,
    time_async,
    time_sync,
)
from _scale_cache import cached_database, stored
from _servers import database, database_version, redis_server

from bench import _app

OWNER = ""  # the loopback principal's owner (LOCAL)
AGENTS = [f"agent-{i}" for i in range(10)]
WORDS = 5000
QUESTION = "How do I rotate the API keys for the staging environment without downtime?"
ANSWER = "Create the new key first, deploy it beside the old one, then revoke the old key."
LIST_P50_MS, OPEN_P50_MS, SEARCH_P50_MS, SEARCH_P99_MS = 5.0, 10.0, 50.0, 200.0

# -- the data ------------------------------------------------------------------------------

BASE = [
    "the",
    "a",
    "to",
    "and",
    "of",
    "in",
    "is",
    "it",
    "you",
    "that",
    "for",
    "on",
    "with",
    "this",
    "be",
    "are",
    "as",
    "can",
    "not",
    "have",
    "but",
    "key",
    "deploy",
    "server",
    "error",
    "user",
    "data",
    "file",
    "config",
    "run",
    "test",
    "build",
    "api",
    "token",
    "model",
    "memory",
    "agent",
    "query",
    "cache",
    "index",
    "rotate",
    "staging",
    "database",
    "redis",
    "window",
    "summary",
    "budget",
    "stream",
    "client",
]


def vocabulary() -> list[str]:
    """Real words first (the frequent ones), then made-up words ``w0123``."""
    return BASE + [f"w{i:04d}" for i in range(WORDS - len(BASE))]


class Texts:
    """Deterministic message texts: 8-40 words, Zipf(1.1) over the vocabulary."""

    def __init__(self, seed: int = 7) -> None:
        self.words = vocabulary()
        weights = [1 / (rank + 1) ** 1.1 for rank in range(len(self.words))]
        self.cum = list(itertools.accumulate(weights))
        self.rng = random.Random(seed)

    def next(self) -> str:
        n = self.rng.randint(8, 40)
        picks = self.rng.choices(self.words, cum_weights=self.cum, k=n)
        return " ".join(picks).capitalize() + "."

    def rank_of(self, share: float) -> str:
        """The word whose rank has about ``share`` of the total weight before it."""
        return self.words[bisect.bisect_left(self.cum, share * self.cum[-1])]


QUERIES = {  # kind -> words (see Texts: rank 2, rank ~300, rank ~4,900)
    "frequent": ["to"],
    "middling": ["w0300"],
    "rare": ["w4900"],
    "two words": ["deploy", "key"],
}


class Loader:
    """Bulk-loads conversations of ``per`` messages, continuing where it stopped."""

    def __init__(self, sync_url: str, per: int) -> None:
        self.engine = sa.create_engine(sync_url)
        self.dialect = self.engine.dialect.name
        self.per = per
        self.texts = Texts()
        self.conversations = 0
        self.messages = 0
        self.uuids: list[str] = []
        self.start = datetime(2026, 1, 1, tzinfo=UTC)

    def load_to(self, total: int) -> float:
        """Load conversations until ``total`` messages are stored; seconds taken."""
        t0 = time.perf_counter()
        if self.messages >= total:  # a kept database (--cache) already holds them
            return 0.0
        with self.engine.connect() as conn:  # the timed turns added rows since
            self.next_id = int(
                conn.exec_driver_sql("SELECT max(id) FROM lumina_message").scalar() or 0
            )
        if self.dialect == "postgresql":
            self._pg_drop_fts()
        while self.messages < total:
            batch = min(20_000 // self.per or 1, (total - self.messages) // self.per or 1)
            convs, msgs = self._batch(batch)
            if self.dialect == "postgresql":
                self._copy(convs, msgs)
            else:
                self._executemany(convs, msgs)
        if self.dialect == "postgresql":
            self._pg_create_fts()
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE")
        return time.perf_counter() - t0

    def _batch(self, n: int) -> tuple[list[tuple], list[tuple]]:
        convs, msgs = [], []
        for _ in range(n):
            self.conversations += 1
            cid = self.conversations
            created = self.start + timedelta(seconds=cid * 60)
            updated = created + timedelta(seconds=self.per * 5)
            uuid = str(uuidlib.uuid4())
            self.uuids.append(uuid)
            agent = AGENTS[cid % len(AGENTS)]
            convs.append(
                (
                    cid,
                    uuid,
                    agent,
                    f"conversation {cid}",
                    "completed",
                    self.per,
                    0,
                    self.per,
                    OWNER,
                    created,
                    updated,
                )
            )
            for seq in range(1, self.per + 1):
                self.messages += 1
                self.next_id += 1
                role = "USER" if seq % 2 else "ASSISTANT"
                stamp = created + timedelta(seconds=seq * 5)
                turn = f"msg-{cid:07d}-{(seq + 1) // 2:05d}"
                msgs.append(
                    (
                        self.next_id,
                        cid,
                        seq,
                        turn,
                        role,
                        self.texts.next(),
                        "complete",
                        stamp,
                        stamp,
                        "{}",
                    )
                )
        return convs, msgs

    CONV_COLS = (
        "id, uuid, agent_id, title, status, message_count, tool_call_count, last_seq, "
        "owner, created_at, updated_at"
    )
    MSG_COLS = (
        "id, conversation_id, seq, turn_id, role, content, status, created_at, updated_at, meta"
    )

    def _executemany(self, convs: list[tuple], msgs: list[tuple]) -> None:
        def stamp(row: tuple, at: tuple[int, ...]) -> tuple:  # SQLAlchemy's SQLite format
            return tuple(
                v.strftime("%Y-%m-%d %H:%M:%S.%f") if i in at else v for i, v in enumerate(row)
            )

        raw = self.engine.raw_connection()
        try:
            cur = raw.cursor()
            cur.executemany(
                f"INSERT INTO lumina_conversation ({self.CONV_COLS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [stamp(c, (9, 10)) for c in convs],
            )
            cur.executemany(
                f"INSERT INTO lumina_message ({self.MSG_COLS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [stamp(m, (7, 8)) for m in msgs],
            )
            raw.commit()
        finally:
            raw.close()

    def _copy(self, convs: list[tuple], msgs: list[tuple]) -> None:
        raw = self.engine.raw_connection()
        try:
            cur = raw.driver_connection.cursor()
            with cur.copy(f"COPY lumina_conversation ({self.CONV_COLS}) FROM STDIN") as copy:
                for row in convs:
                    copy.write_row(row)
            with cur.copy(f"COPY lumina_message ({self.MSG_COLS}) FROM STDIN") as copy:
                for row in msgs:
                    copy.write_row(row)
            raw.driver_connection.commit()
        finally:
            raw.close()

    def _pg_drop_fts(self) -> None:
        with self.engine.begin() as conn:
            conn.exec_driver_sql("DROP INDEX IF EXISTS ix_lumina_message_fts")

    def _pg_create_fts(self) -> None:
        """The GIN index exactly as migration 0014 leaves it; the id sequences moved on."""
        path = ROOT / "alembic" / "versions" / "0014_search_vector.py"
        spec = importlib.util.spec_from_file_location("migration_0014", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with self.engine.begin() as conn:
            for statement in module._POSTGRES_FTS:
                conn.exec_driver_sql(statement)
            for table in ("lumina_conversation", "lumina_message"):
                conn.exec_driver_sql(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT max(id) FROM {table}))"
                )

    def database_bytes(self) -> int:
        with self.engine.connect() as conn:
            if self.dialect == "sqlite":
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
                size = conn.exec_driver_sql("PRAGMA page_size").scalar()
                return int(pages) * int(size)
            return int(conn.exec_driver_sql("SELECT pg_database_size(current_database())").scalar())


# -- operations ----------------------------------------------------------------------------


def ilike_anchor(engine: sa.Engine, words: list[str], conversation_id: int | None) -> sa.Select:
    """The owner's messages containing every word, newest first, LIMIT 20 (the old scan)."""
    M = sa.table(
        "lumina_message",
        sa.column("id"),
        sa.column("conversation_id"),
        sa.column("seq"),
        sa.column("content"),
    )
    C = sa.table("lumina_conversation", sa.column("id"), sa.column("owner"))
    like = M.c.content.like if engine.dialect.name == "sqlite" else M.c.content.ilike
    match = sa.and_(*(like(f"%{word}%") for word in words))
    query = (
        sa.select(M.c.id, M.c.conversation_id, M.c.seq, M.c.content)
        .join(C, C.c.id == M.c.conversation_id)
        .where(match, C.c.owner == OWNER)
    )
    if conversation_id is not None:
        query = query.where(M.c.conversation_id == conversation_id)
    return query.order_by(M.c.id.desc()).limit(20)


async def stage_ops(
    memory, loader: Loader, engine: sa.Engine, n: int, budget: float, search_only: bool = False
) -> dict:
    """Every timed operation at the current size: name -> Samples (and hit counts)."""
    rng = random.Random(11)
    out: dict[str, Samples] = {}
    hits: dict[str, int] = {}
    if search_only:
        return await search_ops(memory, loader, engine, n, budget, out, hits)

    async def list_all() -> None:
        items, _ = await memory.list_conversations(owner=OWNER, limit=20)
        assert len(items) == 20

    async def list_agent() -> None:
        items, _ = await memory.list_conversations(
            owner=OWNER, agent_id=rng.choice(AGENTS), limit=20
        )
        assert items

    _, cursor = await memory.list_conversations(owner=OWNER, limit=20)

    async def list_next() -> None:
        await memory.list_conversations(owner=OWNER, limit=20, cursor=cursor)

    async def open_one() -> None:
        conv = await memory.get_conversation(rng.choice(loader.uuids))
        msgs = await memory.history(conv, limit=40)
        assert len(msgs) == min(40, conv.message_count)

    async def send() -> None:
        conv = await memory.get_conversation(rng.choice(loader.uuids))
        turn = await _app.accept(memory, conv, QUESTION)
        await _app.finish(memory, turn, ANSWER)

    for name, op in (
        ("list page, all agents", list_all),
        ("list page, one agent", list_agent),
        ("list next page (cursor)", list_next),
        ("open (last 40)", open_one),
        ("send a turn", send),
    ):
        out[name] = await time_async(op, Loop(n, min(20, n)))
    return await search_ops(memory, loader, engine, n, budget, out, hits)


async def search_ops(memory, loader, engine, n, budget, out: dict, hits: dict) -> dict:
    """Recall over everything and inside one conversation, each beside its ILIKE scan."""
    target = await memory.get_conversation(loader.uuids[len(loader.uuids) // 2])
    for kind, words in QUERIES.items():
        found = await memory.search(words, owner=OWNER, limit=20)
        hits[f"recall: {kind}"] = len(found)
        op = lambda w=words: memory.search(w, owner=OWNER, limit=20)  # noqa: E731
        out[f"recall: {kind}"] = await time_async(op, Loop(n, 1, budget_s=budget, min_n=5))
        in_conv = lambda w=words: memory.search(  # noqa: E731
            w, owner=OWNER, conversation=target, limit=20
        )
        out[f"recall in one conversation: {kind}"] = await time_async(
            in_conv, Loop(n, 5, budget_s=budget, min_n=5)
        )
        query = ilike_anchor(engine, words, None)
        with engine.connect() as conn:
            hits[f"ilike: {kind}"] = len(conn.execute(query).all())

            def scan(q=query, c=conn) -> None:
                c.execute(q).all()

            out[f"ilike: {kind}"] = time_sync(scan, Loop(n, 1, budget_s=budget, min_n=5))
            one = ilike_anchor(engine, words, target.id)
            out[f"ilike in one conversation: {kind}"] = time_sync(
                lambda q=one, c=conn: c.execute(q).all(), Loop(n, 1, budget_s=budget, min_n=5)
            )
    return {"samples": out, "hits": hits}


async def langgraph_bytes(sync_url: str, engine: sa.Engine, per: int) -> tuple[float, float]:
    """LangGraph's stored bytes per message for one thread grown to ``per`` messages by
    ``ainvoke`` turns, and seconds per turn at the end."""
    from bench import _langgraph  # the anchor's packages (bench/requirements.txt): only here

    tables = _langgraph.TABLES[engine.dialect.name]
    async with _langgraph.LangGraph.open(sync_url, ANSWER) as graph:
        before = _langgraph.stored_bytes(engine, tables)
        thread = f"scale-{uuidlib.uuid4().hex[:8]}"
        t0 = time.perf_counter()
        for _ in range(per // 2):
            t0 = time.perf_counter()
            await graph.turn(thread, QUESTION)
        last = time.perf_counter() - t0
        assert len(await graph.load(thread, 10**9)) == per // 2 * 2
        grown = _langgraph.stored_bytes(engine, tables) - before
    return grown / (per // 2 * 2), last


async def run(args, sync_url: str, redis_url: str) -> tuple[list[dict], tuple[float, float]]:
    loader = Loader(sync_url, args.per_conversation)
    empty = loader.database_bytes()
    if args.cache:  # what an earlier run loaded stays; only the rest is loaded
        loader.messages, loader.conversations, loader.uuids = stored(sync_url)
        empty = None if loader.messages else empty
    engine = sa.create_engine(sync_url)
    store = _app.Memory(sync_url, redis_url)
    stages = []
    try:
        for total in args.stages:
            seconds = loader.load_to(total)
            size = loader.database_bytes()
            note(
                f"loaded {loader.messages:,} messages in {loader.conversations:,} conversations "
                f"in {seconds:.0f} s; database {size / 1e6:,.0f} MB"
            )
            t0 = time.perf_counter()
            ops = await stage_ops(
                store.memory, loader, engine, args.iterations, args.budget, args.search_only
            )
            note(f"measured at {loader.messages:,} in {time.perf_counter() - t0:.0f} s")
            stages.append(
                {
                    "messages": loader.messages,
                    "conversations": loader.conversations,
                    "load_s": seconds,
                    "bytes_per_message": None
                    if empty is None
                    else (size - empty) / loader.messages,
                    **ops,
                }
            )
        graph = (
            None
            if args.search_only
            else await langgraph_bytes(sync_url, engine, args.per_conversation)
        )
    finally:
        await store.close()
        engine.dispose()
        loader.engine.dispose()
    return stages, graph


def report(args, stages: list[dict], graph: tuple[float, float] | None) -> Checks:
    names = list(stages[0]["samples"])
    heads = ["operation"] + [f"{s['messages']:,} msgs p50 / p99 (n)" for s in stages]
    rows = []
    for name in names:
        cells = [name]
        for s in stages:
            x: Samples = s["samples"][name]
            hit = s["hits"].get(name)
            extra = f", {hit} hits" if hit is not None else ""
            cells.append(f"{x.ms(50):.2f} / {x.ms(99):.2f} ({x.n}{extra})")
        rows.append(cells)
    print("\nLatency in ms, p50 / p99 (samples, rows returned).\n")
    print(table(heads, rows))

    print("\nRecall against the ILIKE scan it replaced (anchor p50 / recall p50).\n")
    rows = []
    for kind in QUERIES:
        cells = [kind]
        for s in stages:
            x = s["samples"]
            cells.append(
                fmt_ratio(x[f"ilike: {kind}"].p50 / x[f"recall: {kind}"].p50)
                + " all / "
                + fmt_ratio(
                    x[f"ilike in one conversation: {kind}"].p50
                    / x[f"recall in one conversation: {kind}"].p50
                )
                + " one conversation"
            )
        rows.append(cells)
    print(table(["query"] + [f"{s['messages']:,} msgs" for s in stages], rows))

    checks = Checks()
    if graph is None:  # --search-only
        return search_checks(stages[-1], checks)
    print("\nStorage.\n")
    rows = [
        [
            f"{s['messages']:,} in {s['conversations']:,} conversations",
            f"{s['load_s']:.0f} s",
            "(cached)" if s["bytes_per_message"] is None else f"{s['bytes_per_message']:,.0f}",
        ]
        for s in stages
    ]
    print(table(["stored", "bulk load", "database bytes per message (Lumina)"], rows))
    per_graph, last_turn = graph
    last = stages[-1]["bytes_per_message"] or float("nan")
    print(
        f"\nLangGraph, one thread grown to {args.per_conversation} messages by ainvoke turns: "
        f"{per_graph:,.0f} bytes per message ({fmt_ratio(per_graph / last)} Lumina's), "
        f"last turn {last_turn * 1000:.1f} ms"
    )

    big = stages[-1]
    x = big["samples"]
    m = f"{big['messages']:,}"
    for name, target in (
        ("list page, all agents", LIST_P50_MS),
        ("open (last 40)", OPEN_P50_MS),
    ):
        checks.add(
            x[name].ms(50) <= target,
            f"{m} messages: {name} p50 <= {target:g} ms: {x[name].ms(50):.2f} ms",
        )
    return search_checks(big, checks)


def search_checks(big: dict, checks: Checks) -> Checks:
    """Issue #31: every recall row (all conversations, one conversation) within target."""
    x, m = big["samples"], f"{big['messages']:,}"
    for name in (k for k in x if k.startswith("recall")):
        checks.add(
            x[name].ms(50) <= SEARCH_P50_MS and x[name].ms(99) <= SEARCH_P99_MS,
            f"{m} messages: {name} p50 <= {SEARCH_P50_MS:g} ms, p99 <= {SEARCH_P99_MS:g} ms: "
            f"{x[name].ms(50):.2f} / {x[name].ms(99):.2f} ms",
        )
    return checks


def options(parser) -> None:
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument(
        "--stages", default="10000,1000000", help="stored messages after each load stage"
    )
    parser.add_argument("--per-conversation", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=200, help="timed operations per row")
    parser.add_argument("--budget", type=float, default=5.0, help="s per slow row (n >= 5)")
    parser.add_argument(
        "--cache",
        action="store_true",
        help="load only the last stage, into a database kept for the next run (_scale_cache.py)",
    )
    parser.add_argument(
        "--search-only", action="store_true", help="only recall and its ILIKE anchor rows"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(
        __doc__,
        options,
        {"stages": "2000,20000", "iterations": 30, "budget": 1.0, "per_conversation": 50},
        argv,
    )
    args.stages = [int(s) for s in args.stages.split(",")]
    if args.cache:
        args.stages = args.stages[-1:]
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="lumina-scale-") as tmp,
        redis_server(Path(tmp)) as redis_url,
        (
            cached_database(args.db, args.stages[-1], args.per_conversation)
            if args.cache
            else database(args.db, Path(tmp))
        ) as sync_url,
    ):
        admin = redis.Redis.from_url(redis_url)
        versions = f"SQLAlchemy {sa.__version__}, {database_version(sync_url)}"
        header("scale.py", args, versions)
        admin.close()
        stages, graph = asyncio.run(run(args, sync_url, redis_url))
    report(args, stages, graph).print()
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
