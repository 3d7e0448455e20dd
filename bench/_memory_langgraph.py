"""bench/memory.py's LangGraph rows (the anchor itself is bench/_langgraph.py): at each
size Lumina's production turn and last-20 load beside LangGraph's on the same database, the
bytes each stores per turn, and the checks on them."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa
from _common import Checks, Loop, Samples, fmt_ratio, fmt_us, note, table, time_async

from bench import _app, _langgraph


@dataclass(frozen=True)
class Chat:
    """What memory.py stores and sends: the window size, the turn's texts, a history."""

    window: int
    question: str
    answer: str
    texts: Callable[[int], list[str]]


LUMINA_TABLES = ("lumina_conversation", "lumina_message", "lumina_run")


@dataclass
class GraphRow:
    """One size: Lumina and LangGraph per-turn cost, last-20 load and bytes per turn."""

    lumina_turn: Samples
    lumina_load: Samples
    lumina_bytes: float
    graph_turn: Samples
    graph_load: Samples
    graph_bytes: float


async def langgraph_rows(
    sync_url: str, redis_url: str, sizes: list[int], turns: int, budget: float, chat: Chat
) -> dict[int, GraphRow]:
    """At each size, Lumina's production turn and load, then LangGraph's, on the same
    database; bytes stored per turn over the timed turns."""
    rows: dict[int, GraphRow] = {}
    engine = sa.create_engine(sync_url, poolclass=sa.pool.NullPool)
    lumina = _app.Memory(sync_url, redis_url, window=chat.window)
    memory = lumina.memory
    graph_tables = _langgraph.TABLES[engine.dialect.name]
    try:
        async with _langgraph.LangGraph.open(sync_url, chat.answer) as graph:
            for size in sizes:
                t0 = time.perf_counter()
                conv = await _app.seed(memory, chat.texts(size), title=f"langgraph {size}")
                await memory.rebuild(conv)

                async def lumina_turn(conv=conv) -> None:
                    turn = await _app.accept(memory, conv, chat.question)
                    await _app.finish(memory, turn, chat.answer)

                before = _langgraph.stored_bytes(engine, LUMINA_TABLES)
                lt = await time_async(lumina_turn, Loop(turns, min(10, turns)))
                grown = _langgraph.stored_bytes(engine, LUMINA_TABLES) - before
                lumina_bytes = grown / (lt.n + min(10, turns))
                fresh = await lumina.reads.lookup.get_conversation(conv.uuid)
                ll = await time_async(lambda f=fresh: memory.load(f), Loop(turns, 20))
                assert len(await memory.load(fresh)) == chat.window
                t1 = time.perf_counter()

                thread = f"lg-{size}-{secrets.token_hex(4)}"
                at = await graph.fill(thread, chat.texts(size))
                warm = 2 if size >= 1000 else 10
                before = _langgraph.stored_bytes(engine, graph_tables)
                loop = Loop(turns, warm, budget_s=budget, min_n=10)
                gt = await time_async(lambda t=thread, a=at: graph.turn(t, chat.question, a), loop)
                grown = _langgraph.stored_bytes(engine, graph_tables) - before
                graph_bytes = grown / (gt.n + warm)
                loop = Loop(turns, warm, budget_s=budget, min_n=10)
                gl = await time_async(lambda t=thread: graph.load(t, chat.window), loop)
                assert len(await graph.load(thread, chat.window)) == min(chat.window, size + 2)
                assert len(await graph.load(thread, 10**9)) == size + 2  # forks of `at`
                rows[size] = GraphRow(lt, ll, lumina_bytes, gt, gl, graph_bytes)
                note(
                    f"langgraph {size:,}: lumina {t1 - t0:.1f} s, "
                    f"langgraph {time.perf_counter() - t1:.1f} s ({gt.n} turns)"
                )
    finally:
        await lumina.close()
        engine.dispose()
    return rows


def langgraph_report(
    sizes: list[int],
    rows: dict[int, GraphRow],
    lumina_turn: dict[int, Samples],
    sql_turn: dict[int, Samples],
    checks: Checks,
    scaling_max: float,
) -> None:
    """The table, then the checks: >= 50x LangGraph at the largest size, flat from the
    smallest to the largest, the production turn <= the plain SQL anchor's."""

    def ms(s: Samples) -> str:
        return f"{s.ms(50):.2f} / {s.ms(99):.2f}"

    table_rows = []
    for size in sizes:
        r = rows[size]
        table_rows.append(
            [
                f"{size:,}",
                ms(r.lumina_turn),
                ms(sql_turn[size]),
                f"{ms(r.graph_turn)} (n={r.graph_turn.n})",
                fmt_ratio(r.graph_turn.p50 / r.lumina_turn.p50),
                ms(r.lumina_load),
                ms(r.graph_load),
                fmt_ratio(r.graph_load.p50 / r.lumina_load.p50),
                f"{r.lumina_bytes:,.0f}",
                f"{r.graph_bytes:,.0f}",
                fmt_ratio(r.graph_bytes / r.lumina_bytes) if r.lumina_bytes > 0 else "-",
            ]
        )
    print("\nLangGraph anchor, same database, same run; latency in ms, p50 / p99.\n")
    heads = ["stored", "lumina turn", "anchor(sql) turn", "langgraph turn", "lg/lumina"]
    heads += ["lumina load 20", "langgraph load 20", "lg/lumina"]
    heads += ["lumina B/turn", "langgraph B/turn", "lg/lumina"]
    print(table(heads, table_rows))
    small, large = sizes[0], sizes[-1]
    r = rows[large]
    ratio = r.graph_turn.p50 / r.lumina_turn.p50
    checks.add(
        ratio >= 50,
        f"per-turn cost >= 50x faster than LangGraph at {large:,}: {fmt_ratio(ratio)} "
        f"({r.lumina_turn.ms(50):.2f} vs {r.graph_turn.ms(50):.1f} ms)",
    )
    for what, attr in (("per-turn cost", "lumina_turn"), ("context load", "lumina_load")):
        lum = getattr(rows[large], attr).p50 / getattr(rows[small], attr).p50
        lg_attr = attr.replace("lumina", "graph")
        lg = getattr(rows[large], lg_attr).p50 / getattr(rows[small], lg_attr).p50
        checks.add(
            lum <= scaling_max,
            f"{what} {large:,} / {small:,} <= {scaling_max}x: {fmt_ratio(lum)} "
            f"(LangGraph {fmt_ratio(lg)})",
        )
    for size in (small, large):
        lum, sql = lumina_turn[size].p50, sql_turn[size].p50
        checks.add(
            lum <= sql,
            f"turn write (production path) <= the plain SQL anchor at {size:,}: "
            f"{fmt_us(lum)} vs {fmt_us(sql)} us ({fmt_ratio(lum / sql)})",
        )
