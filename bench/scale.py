"""Scale benchmark: Lumina's everyday operations over a million stored messages, and full-text
recall against the ``ILIKE`` scan it replaced.

    python bench/scale.py [--db sqlite|postgresql] [--stages 10000,1000000]
                          [--per-conversation 100] [--quick]

A throw-away migrated database and a private redis-server. The store is loaded in stages
(default 10,000 then 1,000,000 messages, 100 per conversation: 10,000 conversations at the
end); after each stage, through Lumina's own code (``MemoryManager`` and its read
repositories, as the services call them):

* list page       ``list_conversations(owner, limit=20)``: all agents, one agent, and the
                  next page through the cursor;
* open            ``get_conversation(uuid)`` + ``history(limit=40)`` (the last 40);
* send a turn     the production write path (bench/_app.py: accept + final write, hot
                  window on Redis) into a random stored conversation;
* ranked recall   ``GET /api/v1/recall``'s service call for natural questions, beside the
                  candidate step it replaced (bench/_scale_recall.py);
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
are inserted in bulk (one conversation after another; ``--interleave``: a batch's
conversations side by side, their messages' ids alternating, as concurrent chats write),
``executemany`` in 20,000-row transactions on SQLite with the full-text triggers on (the
FTS5 index is kept as on a live insert), ``COPY`` on PostgreSQL with the GIN index dropped
before and recreated after (as a restore would), then ``ANALYZE``. Texts are 8-40 words
drawn from a Zipf-distributed vocabulary of 5,000 words, so frequent words match a large
share of rows and rare ones a handful.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
import tempfile
import time
import uuid as uuidlib
from pathlib import Path

import redis
import sqlalchemy as sa
from _common import (
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
from _scale_data import AGENTS, OWNER, Loader
from _scale_http import http_search_ops
from _scale_recall import QUESTIONS, recall_ops
from _servers import database, database_version, redis_server

from bench import _app

QUESTION = "How do I rotate the API keys for the staging environment without downtime?"
ANSWER = "Create the new key first, deploy it beside the old one, then revoke the old key."
LIST_P50_MS, OPEN_P50_MS, SEARCH_P50_MS, SEARCH_P99_MS = 5.0, 10.0, 50.0, 200.0
HTTP_ONE_P50_MS = 10.0  # #44: any word in a 1,000-message conversation, over HTTP, at 1M

QUERIES = {  # kind -> words (see _scale_data.Texts: rank 2, rank ~300, rank ~4,900)
    # #44: "a" is in 80 % of the messages (the last word is matched as a prefix, as typed)
    "80 % word": ["a"],
    "frequent": ["to"],
    "middling": ["w0300"],
    "rare": ["w4900"],
    "two words": ["deploy", "key"],
}
# #44's "any word" in one conversation, over HTTP only: three frequent words, a word found
# nowhere, and one no index holds (CJK: its conversation's rows are scanned). Across all
# conversations, that last one scans every row (126-189 ms at 1M, 12-07): no target there.
HTTP_ONE_MORE = {
    "three frequent words": ["a", "to", "the"],
    "found nowhere": ["nowherezz"],
    "unindexed (CJK)": ["数据"],
}


# -- operations ----------------------------------------------------------------------------


def ilike_anchor(engine: sa.Engine, words: list[str], conversation_pk: int | None) -> sa.Select:
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
    if conversation_pk is not None:
        query = query.where(M.c.conversation_id == conversation_pk)
    return query.order_by(M.c.id.desc()).limit(20)


async def stage_ops(
    store, loader: Loader, engine: sa.Engine, n: int, budget: float, search_only: bool | str = False
) -> dict:
    """Every timed operation at the current size: name -> Samples (and hit counts)."""
    memory, reads = store.memory, store.reads
    rng = random.Random(11)
    out: dict[str, Samples] = {}
    hits: dict[str, int] = {}
    if search_only == "recall":
        await recall_ops(store, n, budget, out, hits)
        return {"samples": out, "hits": hits}
    if search_only:
        return await search_ops(store, loader, engine, n, budget, out, hits)

    async def list_all() -> None:
        items, _ = await reads.conversations.list_conversations(owner=OWNER, limit=20)
        assert len(items) == 20

    async def list_agent() -> None:
        items, _ = await reads.conversations.list_conversations(
            owner=OWNER, agent_id=rng.choice(AGENTS), limit=20
        )
        assert items

    _, cursor = await reads.conversations.list_conversations(owner=OWNER, limit=20)

    async def list_next() -> None:
        await reads.conversations.list_conversations(owner=OWNER, limit=20, cursor=cursor)

    async def open_one() -> None:
        conv = await reads.lookup.get_conversation(rng.choice(loader.uuids))
        msgs = await reads.conversations.history(conv, limit=40)
        assert len(msgs) == min(40, conv.message_count)

    async def send() -> None:
        conv = await reads.lookup.get_conversation(rng.choice(loader.uuids))
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
    return await search_ops(store, loader, engine, n, budget, out, hits)


async def search_ops(store, loader, engine, n, budget, out: dict, hits: dict) -> dict:
    """Recall over everything and inside one conversation, each beside its ILIKE scan."""
    reads = store.reads
    target = await reads.lookup.get_conversation(loader.uuids[len(loader.uuids) // 2])
    for kind, words in QUERIES.items():
        found, _in_files = await reads.search.search(words, owner=OWNER, limit=20)
        hits[f"recall: {kind}"] = len(found)
        op = lambda w=words: reads.search.search(w, owner=OWNER, limit=20)  # noqa: E731
        out[f"recall: {kind}"] = await time_async(op, Loop(n, 1, budget_s=budget, min_n=5))
        in_conv = lambda w=words: reads.search.search(  # noqa: E731
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
    await recall_ops(store, n, budget, out, hits)
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


async def run(args, sync_url: str, redis_url: str) -> tuple[list[dict], tuple[float, float] | None]:
    loader = Loader(sync_url, args.per_conversation, args.interleave)
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
                store, loader, engine, args.iterations, args.budget, args.search_only
            )
            if args.http and total == args.stages[-1]:
                ops["samples"].update(
                    await http_search_ops(
                        store,
                        loader,
                        sync_url,
                        QUERIES,
                        HTTP_ONE_MORE,
                        args.iterations,
                        args.budget,
                    )
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
    for kind in QUERIES if "ilike: frequent" in stages[0]["samples"] else ():
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

    print("\nRanked recall across conversations against its replaced candidate step")
    print("(one search per word; before p50 / now p50).\n")
    rows = []
    for kind in [*QUESTIONS, "frequent words, one agent"]:
        x = [s["samples"] for s in stages]
        rows.append([kind] + [fmt_ratio(v[f"recall across, before: {kind}"].p50
                                        / v[f"recall across: {kind}"].p50) for v in x])  # fmt: skip
    print(table(["question"] + [f"{s['messages']:,} msgs" for s in stages], rows))

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
    for name in (k for k in x if k.startswith("recall") and ", before:" not in k):
        checks.add(
            x[name].ms(50) <= SEARCH_P50_MS and x[name].ms(99) <= SEARCH_P99_MS,
            f"{m} messages: {name} p50 <= {SEARCH_P50_MS:g} ms, p99 <= {SEARCH_P99_MS:g} ms: "
            f"{x[name].ms(50):.2f} / {x[name].ms(99):.2f} ms",
        )
    for name in (k for k in x if k.startswith("HTTP")):
        target = HTTP_ONE_P50_MS if "one conversation" in name else SEARCH_P50_MS
        checks.add(
            x[name].ms(50) <= target,
            f"{m} messages: {name} p50 <= {target:g} ms: {x[name].ms(50):.2f} ms",
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
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="each load batch's conversations written side by side (ids alternate)",
    )
    parser.add_argument(
        "--recall-only", action="store_true", help="only the ranked recall rows and their anchor"
    )
    parser.add_argument(
        "--http",
        action="store_true",
        help="the search rows over HTTP too, the real app on the loaded database (_scale_http.py)",
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(
        __doc__,
        options,
        {"stages": "2000,20000", "iterations": 30, "budget": 1.0, "per_conversation": 50},
        argv,
    )
    args.stages = [int(s) for s in args.stages.split(",")]
    if args.recall_only:
        args.search_only = "recall"

    if args.cache:
        args.stages = args.stages[-1:]
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="lumina-scale-") as tmp,
        redis_server(Path(tmp)) as redis_url,
        (
            cached_database(
                args.db, args.stages[-1], args.per_conversation, "_side" if args.interleave else ""
            )
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
