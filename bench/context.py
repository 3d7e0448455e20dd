"""Context benchmark (#15): building a run's context with a rolling summary present, at 10
and at 100,000 stored messages in one conversation, and what summaries cost per turn.

    python bench/context.py [--sizes 10,100000] [--turns 200] [--redis] [--quick]

The app's services in process (bench/_app.py ``App``) on a throw-away SQLite database, hot
window in process (``--redis``: on a private redis-server), an agent with
``"memory": {"summary": true, "recall": true}``.

1. Context build, at each size (10; 20, the first full window; 100,000), in a
   conversation holding a summary (the same ~1.5 KB text at every size, covering
   everything before the window), timed as a *resume* run
   builds it (``TurnPreparer.prepare``): the conversation read fresh, ``load_view`` (the
   window and the summary), ``build_context`` (system prompt, summary message, window,
   input). Three ways: window current in the hot tier; rebuilt from SQL (hot window
   dropped before each); ``build_context`` alone (no I/O).
2. Summary cost, amortised: ``--turns`` turns through the engine (instant demo model) into
   one new conversation, with the summary keeper running after each run as in
   production (it summarises once 10 messages have left the window since the last
   summary: every 5 turns); every ``SummaryKeeper.catch_up`` is timed (read, extractive
   summary, SQL write + hot copy). Anchor: the same turns by an agent without memory
   settings, in the same run; the turn time of both is the stream read to its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import tempfile
import time
from pathlib import Path

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
from _servers import database, database_version, redis_server

from bench import _app

MEMORY_AGENT = "memory"
PLAIN_AGENT = "plain"
AGENTS = {
    MEMORY_AGENT: {"name": "Memory", "memory": {"summary": True, "recall": True}},
    PLAIN_AGENT: {"name": "Plain"},
}
QUESTION = "What did we decide about the staging keys last week, and who owns the rollout?"
ANSWER = "We agreed to rotate the staging keys on Tuesday; Dana owns the rollout plan."
SUMMARY = (
    "The user runs a staging environment with two API gateways and asked how to rotate "
    "keys without downtime. "
) * 8
FLAT_MAX = 1.2
WINDOW = 20  # the app's default context window


def texts(size: int) -> list[str]:
    return [QUESTION if i % 2 == 0 else ANSWER for i in range(size)]


async def context_rows(app: _app.App, size: int, n: int) -> dict[str, Samples]:
    memory, lookup = app.memory, app.services.reads.lookup
    agent = app.agent(MEMORY_AGENT)
    conv = await _app.seed(memory, texts(size), title=f"context {size}", agent_id=MEMORY_AGENT)
    await memory.write_summary(conv, covered_to_seq=max(0, size - 20), text=SUMMARY, model="bench")
    window = app.settings.context_window

    async def build() -> _app.BuiltContext:
        fresh = await lookup.get_conversation(conv.uuid)
        view = await memory.load_view(fresh)
        return _app.build_context(
            agent.system_prompt,
            view.messages,
            QUESTION,
            window=window,
            summary=view.summary if agent.memory.summary else None,
            token_budget=agent.memory.context_tokens,
        )

    built = await build()
    assert built.summary is not None and built.summary.text == SUMMARY, built.summary
    assert len(built.history) == min(window, size), len(built.history)
    out = {"hot window": await time_async(build, Loop(n, 50))}

    rebuilt, rebuilds = Samples(), memory.stats.rebuilds
    for i in range(max(n // 4, 20) + 10):  # the window dropped (untimed) before each
        await memory.hot.delete(conv.uuid)
        t0 = time.perf_counter_ns()
        await build()
        if i >= 10:
            rebuilt.ns.append(time.perf_counter_ns() - t0)
    assert memory.stats.rebuilds - rebuilds == len(rebuilt.ns) + 10
    out["rebuilt from SQL"] = rebuilt
    fresh = await lookup.get_conversation(conv.uuid)
    view = await memory.load_view(fresh)
    summary = view.summary

    def cpu() -> object:
        return _app.build_context(
            agent.system_prompt, view.messages, QUESTION, window=window, summary=summary
        )

    out["build_context alone"] = time_sync(cpu, Loop(n * 5, 100))
    return out


async def turns(app: _app.App, agent: str, count: int) -> tuple[Samples, str]:
    """``count`` turns into one new conversation; each read to its end, then settled."""
    out, conv, runs = Samples(), None, []
    for _ in range(count):
        t0 = time.perf_counter_ns()
        stream = app.stream(QUESTION, conv, agent=agent)
        first = await anext(stream)
        async for _ in stream:
            pass
        out.ns.append(time.perf_counter_ns() - t0)
        conv = first.data["conversationId"]
        runs.append(first.data["runId"])
        await app.settle(conv)
        await app.summaries_idle()
    await app.drop_runs(runs)
    return out, conv


async def measure(args, sync_url: str, data_dir: Path, redis_url: str | None):
    app = await _app.App.open(sync_url, data_dir, redis_url, agents=AGENTS)
    try:
        rows = {}
        for size in args.sizes:
            t0 = time.perf_counter()
            rows[size] = await context_rows(app, size, args.iterations)
            note(f"context at {size:,}: {time.perf_counter() - t0:.1f} s")
        timed = app.time_summaries()
        plain, _ = await turns(app, PLAIN_AGENT, args.turns)
        with_memory, conv = await turns(app, MEMORY_AGENT, args.turns)
        summaries = await app.summaries_of(conv)
    finally:
        await app.close()
    return rows, plain, with_memory, timed, summaries


def report(args, rows, plain: Samples, with_memory: Samples, timed: Samples, summaries: int):
    print("\nContext build with a summary present, ms p50 / p99 (n).\n")
    sizes = args.sizes
    heads = ["path"] + [f"{s:,} stored" for s in sizes] + [f"{sizes[-1]:,} / {sizes[0]:,}"]
    body = []
    for path in rows[sizes[0]]:
        cells = [path]
        for size in sizes:
            x = rows[size][path]
            cells.append(f"{x.ms(50):.3f} / {x.ms(99):.3f} ({x.n})")
        cells.append(fmt_ratio(rows[sizes[-1]][path].p50 / rows[sizes[0]][path].p50))
        body.append(cells)
    print(table(heads, body))

    total_ms = sum(timed.ns) / 1e6

    def pp(x: Samples) -> str:
        return f"{x.ms(50):.2f} / {x.ms(99):.2f} ms"

    print(f"\nSummaries over {args.turns} turns of one conversation (demo model, instant).\n")
    body = [
        ["turn p50 / p99, agent without memory (anchor)", pp(plain)],
        ["turn p50 / p99, agent with summary + recall", pp(with_memory)],
        ["catch_up calls / summaries written", f"{timed.n} / {summaries}"],
        ["catch_up p50 / p99 (all calls)", f"{timed.ms(50):.2f} / {timed.ms(99):.2f} ms"],
        ["summary cost amortised per turn", f"{total_ms / args.turns:.3f} ms"],
        ["summary cost per summary written", f"{total_ms / max(summaries, 1):.2f} ms"],
    ]
    print(table(["what", "figure"], body))

    checks = Checks()
    # At 10 stored the window holds 10 messages, not 20: the flatness check compares with
    # the smallest size that fills the window, so both contexts carry the same payload.
    base = next((s for s in sizes if s >= WINDOW), sizes[0])
    for path in ("hot window", "rebuilt from SQL"):
        ratio = rows[sizes[-1]][path].p50 / rows[base][path].p50
        checks.add(
            ratio <= FLAT_MAX,
            f"context build ({path}) flat: p50 at {sizes[-1]:,} / at {base:,} <= "
            f"{FLAT_MAX}x: {fmt_ratio(ratio)}",
        )
    amortised = total_ms / args.turns
    checks.add(
        amortised <= 0.1 * plain.ms(50),
        f"summary cost per turn, amortised, <= 10% of a turn: {amortised:.3f} ms vs "
        f"{plain.ms(50):.2f} ms",
    )
    return checks


def options(parser) -> None:
    parser.add_argument("--sizes", default="10,20,100000", help="stored messages, comma-separated")
    parser.add_argument("--iterations", type=int, default=1000, help="context builds per row")
    parser.add_argument("--turns", type=int, default=200, help="turns for the summary cost")
    parser.add_argument("--redis", action="store_true", help="hot window on a redis-server")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(
        __doc__, options, {"sizes": "10,20,2000", "iterations": 100, "turns": 30}, argv
    )
    args.sizes = sorted(int(s) for s in args.sizes.split(","))
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lumina-context-") as tmp:
        tmp_path = Path(tmp)
        hot = redis_server(tmp_path) if args.redis else contextlib.nullcontext(None)
        with database("sqlite", tmp_path) as sync_url, hot as redis_url:
            header("context.py", args, database_version(sync_url))
            rows, plain, with_memory, timed, summaries = asyncio.run(
                measure(args, sync_url, tmp_path / "data", redis_url)
            )
    report(args, rows, plain, with_memory, timed, summaries).print()
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
