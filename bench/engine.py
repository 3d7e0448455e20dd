"""Engine benchmark: a run's first event, its store writes and event throughput.

    python bench/engine.py [--redis] [--runs N] [--events N] [--quick]

The app's services (``open_services``) on a migrated temp SQLite file, agent ``bench``,
the demo provider at ``demo_delay_ms=0``. The hot window and run events are in process;
``--redis`` puts both on a private redis-server (run events copied to Redis Streams).

(a) First event: ``execute_stream`` from the call to its first event, each run read to
    the end and finished before the next. A new conversation, and conversations seeded
    with 10 and 10,000 messages in three scenarios: *continue* (warm session), *resume*
    (session dropped: window from the hot tier), *rebuild* (session and hot window
    dropped: window from SQL). Rows run round-robin; each run adds 2 messages. Inside
    the same runs the production write path is timed: the accept (``begin_turn`` /
    ``begin_conversation``, on the way to the first event) and the final write
    (``finish_answer``). An untimed pass counts what one run sends (bench/_probe.py).
(b) Throughput: one run of ``--events`` text deltas from an instant provider that yields
    to the loop after each (like a socket read), followed to the end; events/s. Persistence
    off = answer flushes and the final write as no-ops. Anchor: the same provider into an
    ``asyncio.Queue``; reference: the bare in-process run-event log. Median of
    ``--repeats``, interleaved with the order rotated. Also runs of 1,000 deltas back to
    back (each with its accept and final write).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import secrets
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import redis
import sqlalchemy as sa
from _common import Checks, Samples, fmt_ms, fmt_n, header, note, parse_args, table
from _probe import Counts, Probe
from _servers import database, database_version, redis_server

from bench import _app
from bench._app import EventType, Finish, LocalRunEventLog, RunEvent, TextDelta, Usage

MESSAGE = "How do I rotate the API keys for the staging environment without downtime?"
STORED = (
    "Can you summarise what we decided about the deployment schedule last week?",
    "We agreed to deploy on Tuesdays and Thursdays before noon, with a freeze in the last "
    "week of each quarter, and to keep one person on call for two hours after each deploy.",
)
DELTA = " word"  # 5 characters, about one token

FIRST_EVENT_P50_MS = 5.0
EVENTS_PER_S = 20_000
ON_OFF_RATIO = 0.90


@dataclass
class InstantProvider:
    """``events`` text deltas, no sleep, handing control back to the loop after each."""

    events: int
    name: str = "instant"
    model: str = "instant"

    async def stream(
        self, messages: Sequence[object], tools: Sequence[object] = ()
    ) -> AsyncIterator[object]:
        for _ in range(self.events):
            yield TextDelta(DELTA)
            await asyncio.sleep(0)
        yield Usage(prompt_tokens=10, completion_tokens=self.events)
        yield Finish("stop")


# -- (a) first event and the run's writes -----------------------------------------------------


@dataclass
class Row:
    label: str
    scenario: str
    conversation: str | None = None
    first: Samples = field(default_factory=Samples)
    phases: dict[str, Samples] = field(default_factory=lambda: defaultdict(Samples))
    counts: dict[str, Counts] = field(default_factory=lambda: defaultdict(Counts))
    seen: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    stored: int = 0


class Writes:
    """Wraps the run's store writes: times them for ``row``, counts them into its
    ``counts`` while a probe is set."""

    def __init__(self) -> None:
        self.row: Row | None = None
        self.probe: Probe | None = None

    def wrap(self, phase: str, fn):
        if phase == "flush":  # group-committed by another task: counted with the run
            return fn

        async def wrapped(*args: object, **kwargs: object) -> object:
            row, probe = self.row, self.probe
            if row is None:
                return await fn(*args, **kwargs)
            counting = probe.into(row.counts[phase]) if probe else contextlib.nullcontext()
            t0 = time.perf_counter_ns()
            with counting:
                result = await fn(*args, **kwargs)
            if probe is None:
                row.phases[phase].ns.append(time.perf_counter_ns() - t0)
            return result

        return wrapped


async def one_run(app: _app.App, row: Row, writes: Writes, *, measured: bool) -> None:
    """Prepare (untimed), time call -> first event, read to the end, wait for the run."""
    if row.conversation is not None and row.scenario != "continue":
        await app.forget(row.conversation, window=row.scenario == "rebuild")
    writes.row = row if measured else None
    stats = app.memory.stats
    hits, rebuilds = stats.hits, stats.rebuilds
    counting = writes.probe.into(row.counts["run"]) if writes.probe else contextlib.nullcontext()
    with counting:
        t0 = time.perf_counter_ns()
        events = app.stream(MESSAGE, row.conversation)
        first = await anext(events)
        t1 = time.perf_counter_ns()
        async for _ in events:
            pass
        await app.settle(first.data["conversationId"])
    writes.row = None
    await app.drop_runs([first.data["runId"]])
    if measured and writes.probe is None:
        row.first.ns.append(t1 - t0)
        row.seen[first.data["scenario"]] += 1
        row.seen["window from the hot tier"] += stats.hits - hits
        row.seen["window from SQL"] += stats.rebuilds - rebuilds


async def first_events(app: _app.App, sizes: list[int], runs: int, warmup: int) -> list[Row]:
    rows = [Row("new conversation", "new")]
    for stored in sizes:
        for scenario in ("continue", "resume", "rebuild"):
            texts = [STORED[i % 2] for i in range(stored)]
            conv = await _app.seed(app.memory, texts, title=f"seeded {stored}")
            rows.append(Row(f"{stored:,} stored", scenario, conv.uuid, stored=stored))
    writes = Writes()
    app.wrap_writes(writes.wrap)
    try:
        gc.collect()
        t0 = time.perf_counter()
        for i in range(warmup + runs):  # round-robin: load drift hits every row alike
            for row in rows:
                await one_run(app, row, writes, measured=i >= warmup)
        note(f"first-event runs: {time.perf_counter() - t0:.1f} s")
        with Probe(app.engines) as writes.probe:
            for row in rows:
                for _ in range(5):
                    await one_run(app, row, writes, measured=True)
    finally:
        app.wrap_writes(None)
    return rows


async def report_first_events(app: _app.App, rows: list[Row], runs: int, checks: Checks) -> None:
    print(
        f"\n(a) First event: execute_stream call -> first event, {runs} runs per row; the "
        "run's accept and final write timed inside the same runs (ms)\n"
    )
    out = []
    for row in rows:
        after = await app.message_count(row.conversation) if row.conversation else 0
        stored = f"{row.stored:,} -> {after:,}" if row.conversation else "0"
        accept, final = row.phases["accept"], row.phases["final"]
        out.append(
            [
                row.label,
                row.scenario,
                stored,
                ", ".join(f"{k} {v}" for k, v in row.seen.items() if v),
                f"{fmt_ms(row.first.ms(50))} / {fmt_ms(row.first.ms(99))}",
                f"{fmt_ms(accept.ms(50))} / {fmt_ms(accept.ms(99))}",
                f"{fmt_ms(final.ms(50))} / {fmt_ms(final.ms(99))}",
            ]
        )
        if row.conversation:
            checks.add(
                row.first.ms(50) <= FIRST_EVENT_P50_MS,
                f"first event p50 <= {FIRST_EVENT_P50_MS:.0f} ms, {row.label}, "
                f"{row.scenario}: {fmt_ms(row.first.ms(50))} ms",
            )
    heads = ["conversation", "scenario", "messages", "seen", "first event p50 / p99"]
    print(table([*heads, "accept p50 / p99", "final write p50 / p99"], out))
    print("\nWhat one run sends (untimed pass of 5 runs per row; per run):\n")
    out = []
    for row in rows:
        run, accept, final = (row.counts[k] for k in ("run", "accept", "final"))
        phases = [f"{fmt_n(c.stmts)} / {fmt_n(c.txns)} / {fmt_n(c.rt)}" for c in (accept, final)]
        out.append([row.label, row.scenario, run.sql_detail(), fmt_n(run.rt), *phases])
        checks.add(
            (accept.txns, final.txns) == (1, 1),
            f"one transaction each for the accept and the final write, {row.label}, "
            f"{row.scenario}: {fmt_n(accept.txns)} + {fmt_n(final.txns)}",
        )
    heads = ["conversation", "scenario", "sql statements", "redis round trips"]
    print(table([*heads, "accept stmts / txn / rt", "final write stmts / txn / rt"], out))


# -- (b) throughput ------------------------------------------------------------------------


async def engine_rate(app: _app.App, events: int, on: bool, runs: int = 1) -> float:
    """Events/s through execute_stream: ``runs`` runs back to back in one conversation."""
    app.use_provider(InstantProvider(events))
    app.persistence(on)
    conv = None
    received, run_ids = 0, []
    gc.collect()
    t0 = time.perf_counter()
    for _ in range(runs):
        stream = app.stream(MESSAGE, conv)
        first = await anext(stream)
        conv = first.data["conversationId"]
        run_ids.append(first.data["runId"])
        received += 1
        async for _ in stream:
            received += 1
        await app.settle(conv)
    elapsed = time.perf_counter() - t0
    app.persistence(True)
    app.use_provider(None)
    await app.drop_runs(run_ids)  # untimed: 50,000 retained events would load the GC
    return received / elapsed


async def log_rate(events: int) -> float:
    """The bare in-process run-event log: the same provider, publish -> subscribe."""
    log, run_id = LocalRunEventLog(retention=300), "run-" + secrets.token_hex(8)

    async def produce() -> None:
        n = 1
        async for item in InstantProvider(events).stream([]):
            if isinstance(item, TextDelta):
                await log.publish(run_id, RunEvent(n, EventType.DELTA, {"text": item.text}))
                n += 1
        await log.publish(run_id, RunEvent(n, EventType.RESULT, {"status": "complete"}))
        await log.finish(run_id)

    await log.publish(run_id, RunEvent(0, EventType.SESSION, {}))
    gc.collect()
    t0 = time.perf_counter()
    task = asyncio.create_task(produce())
    received = sum([1 async for _ in log.subscribe(run_id)])
    await task
    return received / (time.perf_counter() - t0)


async def queue_rate(events: int) -> float:
    """The anchor: the same provider into an ``asyncio.Queue``, a consumer at the other end."""
    queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()

    async def produce() -> None:
        n = 1
        async for item in InstantProvider(events).stream([]):
            if isinstance(item, TextDelta):
                await queue.put(RunEvent(n, EventType.DELTA, {"text": item.text}))
                n += 1
        await queue.put(RunEvent(n, EventType.RESULT, {"status": "complete"}))
        await queue.put(None)

    gc.collect()
    t0 = time.perf_counter()
    task = asyncio.create_task(produce())
    received = 0
    while await queue.get() is not None:
        received += 1
    await task
    return received / (time.perf_counter() - t0)


async def throughput(app: _app.App, events: int, repeats: int, checks: Checks) -> None:
    short = max(1, events // 1000)
    loops = {
        "anchor: asyncio.Queue, producer task -> consumer": lambda: queue_rate(events),
        "bare LocalRunEventLog publish -> subscribe": lambda: log_rate(events),
        "engine, persistence off": lambda: engine_rate(app, events, False),
        "engine, persistence on": lambda: engine_rate(app, events, True),
        f"{short} runs x 1,000 deltas, persistence off": lambda: engine_rate(
            app, 1000, False, short
        ),
        f"{short} runs x 1,000 deltas, persistence on": lambda: engine_rate(app, 1000, True, short),
    }
    rates: dict[str, list[float]] = {name: [] for name in loops}
    await engine_rate(app, min(events, 5000), True)  # warm-up
    await engine_rate(app, min(events, 5000), False)
    names = list(loops)
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            rates[name].append(await loops[name]())
        note(f"throughput repeat {r + 1}/{repeats} done")
    median = {name: statistics.median(v) for name, v in rates.items()}
    anchor = median[names[0]]
    print(
        f"\n(b) Throughput: one run of {events:,} deltas (+2 events), the provider yields "
        f"after each delta; median of {repeats}\n"
    )
    rows = [
        [
            name,
            f"{median[name]:,.0f}",
            f"{min(v):,.0f} - {max(v):,.0f}",
            f"{median[name] / anchor:.2f}",
        ]
        for name, v in rates.items()
    ]
    print(table(["loop", "events/s (median)", "range", "/ anchor"], rows))
    on, off = median[names[3]], median[names[2]]
    checks.add(on >= EVENTS_PER_S, f"events/s, persistence on >= {EVENTS_PER_S:,}: {on:,.0f}")
    checks.add(
        on / off >= ON_OFF_RATIO,
        f"persistence on >= {ON_OFF_RATIO:.0%} of off: {on / off:.0%} ({on:,.0f} / {off:,.0f})",
    )


# -- main ----------------------------------------------------------------------------------


def options(parser) -> None:
    parser.add_argument("--redis", action="store_true", help="hot window + run events on Redis")
    parser.add_argument("--runs", type=int, default=300, help="first-event runs per row")
    parser.add_argument("--warmup", type=int, default=20, help="untimed runs per row first")
    parser.add_argument("--sizes", default="10,10000", help="stored messages, comma-separated")
    parser.add_argument("--events", type=int, default=50_000, help="deltas per throughput run")
    parser.add_argument("--repeats", type=int, default=5, help="throughput repeats (median)")


async def run(args, tmp: Path, sync_url: str, redis_url: str | None) -> Checks:
    app = await _app.App.open(sync_url, tmp / "data", redis_url)
    checks = Checks()
    try:
        print(app.describe())
        sizes = [int(s) for s in args.sizes.split(",")]
        rows = await first_events(app, sizes, args.runs, args.warmup)
        await report_first_events(app, rows, args.runs, checks)
        await throughput(app, args.events, args.repeats, checks)
    finally:
        await app.close()
    return checks


def main(argv: list[str] | None = None) -> int:
    quick = {"runs": 20, "warmup": 2, "sizes": "10,1000", "events": 5000, "repeats": 1}
    args = parse_args(__doc__, options, quick, argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lumina-bench-")))
        sync_url = stack.enter_context(database("sqlite", tmp))
        versions = f"SQLAlchemy {sa.__version__}, {database_version(sync_url)} (temp file, WAL)"
        redis_url = None
        if args.redis:
            redis_url = stack.enter_context(redis_server(tmp))
            server = redis.Redis.from_url(redis_url)
            versions += f", redis-server {server.info('server')['redis_version']}"
            server.close()
        header("engine.py", args, versions)
        checks = asyncio.run(run(args, tmp, sync_url, redis_url))
    checks.print()
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
