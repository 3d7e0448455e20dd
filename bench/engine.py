"""Engine benchmark: ChatEngine with an instant provider, first-event latency and throughput.

    .venv/bin/python bench/engine.py [--redis] [--runs N] [--events N] [--profile WHAT]

Opens the real services (``open_services``) on a migrated temp SQLite database, with a
temp data folder holding one agent ``bench`` ({"name": "Bench"}). The hot window and the
run-event log are in process by default; ``--redis`` puts both on Redis (the Redis hot
window, and run events copied to Redis Streams) under a key prefix of its own, removed
at the end.

(a) First-event latency: from calling ``services.chat.stream(agent_id=..., message=...,
    conversation_uuid=...)`` (the engine's execute_stream) to receiving its first event,
    with the demo provider at ``demo_delay_ms=0`` (instant). Each run is consumed to the
    end and finished before the next starts (one active run per conversation). Measured
    for a new conversation and for conversations seeded with 10 and 10,000 messages, in
    three scenarios: *continue* (the warm session is reused: the normal follow-up),
    *resume* (session pool cleared before each run: the window is read from the hot tier)
    and *rebuild* (session pool and hot window cleared: the window is read from SQL).
    Every run adds 2 messages, so a conversation grows by 2 x runs during its row.

(b) Throughput: one run of ``--events`` text deltas from an instant provider that hands
    control back to the loop after every delta (``await asyncio.sleep(0)``, like a network
    read) consumed by a follower of ``chat.stream``; events/s = events received / time from
    the call to the end of the stream. Persistence on = the normal engine (AnswerFlusher
    UPDATEs every 250 ms or 200 characters, then the final write); persistence off = the
    same engine with ``memory.flush_answer`` and ``memory.finish_answer`` replaced by
    no-ops and the flusher's triggers set out of reach (it only collects the parts).
    References on the same provider: the bare ``LocalRunEventLog`` (publish -> subscribe,
    no engine) and the anchor, an ``asyncio.Queue`` from a producer task to a consumer.
    Each loop runs ``--repeats`` times (5; 3 with ``--redis``), interleaved with the order
    rotated; the median is reported. The finished runs' event buffers (kept 5 minutes for
    resuming) are deleted after each measurement, untimed. Informational rows: flushing
    on the 250 ms timer only; no-op writes with the flusher's triggers as normal (it still
    joins the whole text per flush); a provider that never yields (a burst); runs of 1,000
    deltas back to back (per-run start and final write included).

``--profile first|throughput`` measures only that part under cProfile and prints the top
functions. Latencies come from ``time.perf_counter_ns``. The script always exits 0: it is
a report, the PASS/FAIL lines are for reading.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import logging
import platform
import pstats
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import redis  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from _common import Samples, fmt_ms, machine_line, migrate, table, verdict  # noqa: E402

from lumina_app.agents.context import ChatMessage  # noqa: E402
from lumina_app.composition import Services, open_services  # noqa: E402
from lumina_app.domain import (  # noqa: E402
    EventType,
    Finish,
    LLMEvent,
    Msg,
    RunEvent,
    TextDelta,
    Usage,
    new_turn_id,
)
from lumina_app.settings import load_settings  # noqa: E402
from lumina_app.storage.local.run_events import LocalRunEventLog  # noqa: E402

AGENT = "bench"
MESSAGE = "How do I rotate the API keys for the staging environment without downtime?"
STORED_USER = "Can you summarise what we decided about the deployment schedule last week?"
STORED_ASSISTANT = (
    "We agreed to deploy on Tuesdays and Thursdays before noon, with a freeze in the last "
    "week of each quarter, and to keep one person on call for two hours after each deploy."
)
DELTA_TEXT = " word"  # 5 characters, about one token

# Targets (printed as PASS/FAIL; the script always exits 0).
FIRST_EVENT_P50_MS = 5.0
EVENTS_PER_S = 20_000
ON_OFF_RATIO = 0.90


# -- providers -----------------------------------------------------------------------------


@dataclass
class InstantProvider:
    """``events`` text deltas, no sleep; ``yield_every`` > 0 hands control back to the loop
    (``asyncio.sleep(0)``) after that many deltas, like a provider reading a socket."""

    events: int
    yield_every: int = 1
    name: str = "instant"
    model: str = "instant"

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[LLMEvent]:
        every = self.yield_every
        for i in range(1, self.events + 1):
            yield TextDelta(DELTA_TEXT)
            if every and i % every == 0:
                await asyncio.sleep(0)
        yield Usage(prompt_tokens=10, completion_tokens=self.events)
        yield Finish("stop")


# -- set-up --------------------------------------------------------------------------------


def write_agent(data_dir: Path) -> None:
    folder = data_dir / "agents" / AGENT
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"name": "Bench"}), encoding="utf-8")


async def seed(services: Services, stored: int) -> str:
    """A conversation with ``stored`` final messages (Q/A pairs), inserted in bulk."""
    memory = services.memory
    conv = await memory.create_conversation(agent_id=AGENT, title=f"seeded {stored}")
    batch = 1000
    for start in range(0, stored, batch):
        msgs: list[Msg] = []
        for i in range(start, min(stored, start + batch), 2):
            turn = new_turn_id()
            msgs.append(Msg.user(f"{STORED_USER} ({i})", turn_id=turn))
            if i + 1 < stored:
                msgs.append(Msg.assistant(STORED_ASSISTANT, turn_id=turn))
        await memory.cold.append_messages(conv.id, msgs)
    return conv.uuid


async def drain(agen: AsyncIterator[RunEvent]) -> int:
    count = 0
    async for _ in agen:
        count += 1
    return count


async def settle(services: Services, conversation: str | None) -> None:
    """Wait until the conversation's run (if any) has fully finished."""
    if conversation is not None:
        run = services.chat.active_run_for(conversation)
        if run is not None:
            await run.done.wait()


# -- (a) first event -----------------------------------------------------------------------


@dataclass
class FirstEvent:
    label: str
    stored: int
    scenario_wanted: str
    samples: Samples
    scenarios: dict[str, int]
    stored_after: int
    window: str


@dataclass
class _Row:
    label: str
    stored: int
    conversation: str | None
    scenario: str
    samples: Samples
    seen: dict[str, int]
    hits: int = 0
    rebuilds: int = 0


async def _one_run(services: Services, row: _Row, *, measured: bool) -> None:
    """One run of ``row``: prepare (untimed), time call -> first event, drain, settle."""
    chat, memory = services.chat, services.memory
    if row.conversation is not None and row.scenario in ("resume", "rebuild"):
        chat.sessions.drop(AGENT, row.conversation)
        if row.scenario == "rebuild":
            await memory.hot.delete(row.conversation)
    hits, rebuilds = memory.stats.hits, memory.stats.rebuilds
    clock = time.perf_counter_ns
    t0 = clock()
    agen = chat.stream(agent_id=AGENT, message=MESSAGE, conversation_uuid=row.conversation)
    first = await anext(agen)
    t1 = clock()
    await drain(agen)
    await settle(services, first.data["conversationId"])
    if measured:
        row.samples.ns.append(t1 - t0)
        scenario = first.data["scenario"]
        row.seen[scenario] = row.seen.get(scenario, 0) + 1
        row.hits += memory.stats.hits - hits
        row.rebuilds += memory.stats.rebuilds - rebuilds


async def measure_first_events(
    services: Services, sizes: list[int], runs: int, warmup: int
) -> list[FirstEvent]:
    """Rows run round-robin (one run of each row in turn), so a change in machine load
    during the measurement hits every row alike."""
    rows = [_Row("new conversation", 0, None, "new", Samples(), {})]
    for stored in sizes:
        for scenario in ("continue", "resume", "rebuild"):
            t0 = time.perf_counter()
            conv = await seed(services, stored)
            print(
                f"  seeded {stored:,} messages in {time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
            )
            rows.append(_Row(f"{stored:,} stored", stored, conv, scenario, Samples(), {}))
    gc.collect()
    t0 = time.perf_counter()
    for i in range(warmup + runs):
        for row in rows:
            await _one_run(services, row, measured=i >= warmup)
    print(f"  first-event runs: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    out = []
    for row in rows:
        after = 0
        if row.conversation is not None:
            after = (await services.memory.get_conversation(row.conversation)).message_count
        window = "-" if not (row.hits or row.rebuilds) else f"hot {row.hits}, SQL {row.rebuilds}"
        out.append(
            FirstEvent(row.label, row.stored, row.scenario, row.samples, row.seen, after, window)
        )
    return out


# -- (b) throughput ------------------------------------------------------------------------


async def _noop_flush(message_id: int, content: str) -> None:
    return None


async def _noop_finish(*args: object, **kwargs: object) -> None:
    return None


class Throughput:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.memory = services.memory
        self._real = (services.memory.flush_answer, services.memory.finish_answer)
        self._for_agent = services.providers.for_agent
        self.flushes: list[tuple[int, int]] = []

    def provider(self, events: int, yield_every: int) -> None:
        self.services.providers.for_agent = lambda agent: InstantProvider(events, yield_every)

    def persistence(self, on: bool) -> None:
        if on:
            self.memory.flush_answer, self.memory.finish_answer = self._real
        else:
            self.memory.flush_answer, self.memory.finish_answer = _noop_flush, _noop_finish

    def restore(self) -> None:
        self.persistence(True)
        self.services.providers.for_agent = self._for_agent

    async def engine(
        self,
        events: int,
        yield_every: int,
        on: bool,
        runs: int = 1,
        *,
        timer_only: bool = False,
        flusher_idle: bool | None = None,
    ) -> float:
        """Events/s through ``chat.stream`` (``runs`` runs back to back, one conversation).

        ``on=False``: flush_answer and finish_answer are no-ops and (unless
        ``flusher_idle=False``) the flusher's triggers are out of reach, so it only collects
        the parts. ``timer_only`` turns off the 200-character trigger (flush every 250 ms).
        """
        self.provider(events, yield_every)
        self.persistence(on)
        settings = self.services.settings
        chars, interval = settings.flush_chars, settings.flush_interval_ms
        if flusher_idle is None:
            flusher_idle = not on
        if timer_only or flusher_idle:
            settings.flush_chars = 10**12
        if flusher_idle:
            settings.flush_interval_ms = 10**9
        conv = (await self.memory.create_conversation(agent_id=AGENT, title="throughput")).uuid
        counting = _count_flushes(self.memory) if on else None
        gc.collect()
        received = 0
        run_ids = []
        t0 = time.perf_counter()
        for _ in range(runs):
            agen = self.services.chat.stream(
                agent_id=AGENT, message=MESSAGE, conversation_uuid=conv
            )
            first = await anext(agen)
            run_ids.append(first.data["runId"])
            received += 1 + await drain(agen)
            await settle(self.services, conv)
        elapsed = time.perf_counter() - t0
        settings.flush_chars, settings.flush_interval_ms = chars, interval
        if counting is not None:
            flushes = counting()
            if not timer_only and runs == 1 and yield_every:
                self.flushes.append(flushes)
        self.persistence(True)
        await _flush_redis_copy(self.services)
        # Untimed: drop the finished runs' event buffers (kept 5 min for resuming), so the
        # next measurement does not carry 50,000 retained events through the GC.
        for run_id in run_ids:
            await self.services.events.delete(run_id)
        return received / elapsed

    async def event_log(self, events: int, yield_every: int) -> float:
        """The bare in-process run-event log: the same provider, publish -> subscribe."""
        log = LocalRunEventLog(retention=300)
        run_id = "run-" + secrets.token_hex(8)
        provider = InstantProvider(events, yield_every)

        async def produce() -> None:
            next_id = 1
            async for item in provider.stream([]):
                if isinstance(item, TextDelta):
                    await log.publish(
                        run_id, RunEvent(next_id, EventType.DELTA, {"text": item.text})
                    )
                    next_id += 1
            await log.publish(run_id, RunEvent(next_id, EventType.RESULT, {"status": "complete"}))
            await log.finish(run_id)

        await log.publish(run_id, RunEvent(0, EventType.SESSION, {}))
        gc.collect()
        t0 = time.perf_counter()
        task = asyncio.create_task(produce())
        received = await drain(log.subscribe(run_id))
        await task
        return received / (time.perf_counter() - t0)

    @staticmethod
    async def queue(events: int, yield_every: int) -> float:
        """The anchor: the same provider into an ``asyncio.Queue``, a consumer at the other end."""
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        provider = InstantProvider(events, yield_every)

        async def produce() -> None:
            next_id = 1
            async for item in provider.stream([]):
                if isinstance(item, TextDelta):
                    await queue.put(RunEvent(next_id, EventType.DELTA, {"text": item.text}))
                    next_id += 1
            await queue.put(RunEvent(next_id, EventType.RESULT, {"status": "complete"}))
            await queue.put(None)

        gc.collect()
        t0 = time.perf_counter()
        task = asyncio.create_task(produce())
        received = 0
        while await queue.get() is not None:
            received += 1
        await task
        return received / (time.perf_counter() - t0)


def _count_flushes(memory) -> Callable[[], tuple[int, int]]:  # noqa: ANN001
    """Wrap flush_answer to count the intermediate UPDATEs of one measurement and the
    characters they (re)write."""
    real = memory.flush_answer
    count = chars = 0

    async def counted(message_id: int, content: str) -> None:
        nonlocal count, chars
        count += 1
        chars += len(content)
        await real(message_id, content)

    memory.flush_answer = counted

    def done() -> tuple[int, int]:
        memory.flush_answer = real
        return count, chars

    return done


async def _flush_redis_copy(services: Services) -> None:
    flush = getattr(services.events, "flush", None)
    if flush is not None:
        await flush()


@dataclass
class Rate:
    label: str
    values: list[float]
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.values)


async def measure_throughput(
    services: Services, events: int, repeats: int
) -> tuple[list[Rate], list[Rate], Throughput]:
    bench = Throughput(services)
    main = {
        "anchor: asyncio.Queue": Rate("anchor: asyncio.Queue, producer task -> consumer", []),
        "log": Rate("bare LocalRunEventLog publish -> subscribe", []),
        "off": Rate("engine, persistence off", []),
        "on": Rate("engine, persistence on", []),
    }
    burst = {
        "off": Rate("burst provider (never yields), persistence off", []),
        "on": Rate("burst provider (never yields), persistence on", []),
    }
    timer = Rate("persistence on, 200-char flush trigger off (250 ms timer only)", [])
    noop = Rate("no-op store writes, flusher triggers as normal (joins the text)", [])
    short_runs = max(1, events // 1000)
    short = {
        "off": Rate(f"{short_runs} runs x 1,000 deltas, persistence off", []),
        "on": Rate(f"{short_runs} runs x 1,000 deltas, persistence on", []),
    }
    try:
        # Warm-up (untimed): code paths, connections, allocator.
        await bench.engine(min(events, 5000), 1, True)
        await bench.engine(min(events, 5000), 1, False)
        bench.flushes.clear()
        for r in range(repeats):
            # Interleaved, order rotated, so drift in machine load hits every loop alike.
            order = ["anchor: asyncio.Queue", "log", "off", "on"]
            order = order[r % 4 :] + order[: r % 4]
            for key in order:
                if key == "anchor: asyncio.Queue":
                    main[key].values.append(await bench.queue(events, 1))
                elif key == "log":
                    main[key].values.append(await bench.event_log(events, 1))
                else:
                    main[key].values.append(await bench.engine(events, 1, key == "on"))
            timer.values.append(await bench.engine(events, 1, True, timer_only=True))
            noop.values.append(await bench.engine(events, 1, False, flusher_idle=False))
            for key in ("off", "on") if r % 2 == 0 else ("on", "off"):
                burst[key].values.append(await bench.engine(events, 0, key == "on"))
            for key in ("off", "on") if r % 2 == 0 else ("on", "off"):
                short[key].values.append(await bench.engine(1000, 1, key == "on", short_runs))
            print(f"  throughput repeat {r + 1}/{repeats} done", file=sys.stderr)
    finally:
        bench.restore()
    return list(main.values()), [timer, noop, *burst.values(), *short.values()], bench


# -- report --------------------------------------------------------------------------------


def report_first_events(rows: list[FirstEvent], runs: int) -> list[tuple[bool, str]]:
    print(f"\n(a) First event: chat.stream(...) call -> first event, {runs} runs per row\n")
    table_rows = []
    checks: list[tuple[bool, str]] = []
    for row in rows:
        p50, p99 = row.samples.p50 / 1000, row.samples.p99 / 1000
        seen = ", ".join(f"{k} {v}" for k, v in sorted(row.scenarios.items()))
        gated = row.stored > 0
        ok = p50 <= FIRST_EVENT_P50_MS
        stored = "0" if row.stored == 0 else f"{row.stored:,} -> {row.stored_after:,}"
        table_rows.append(
            [
                row.label,
                row.scenario_wanted,
                stored,
                seen,
                row.window,
                fmt_ms(p50),
                fmt_ms(p99),
                verdict(ok) if gated else "(info)",
            ]
        )
        if gated:
            checks.append(
                (
                    ok,
                    f"first event p50 <= {FIRST_EVENT_P50_MS:.0f} ms, {row.label}, "
                    f"{row.scenario_wanted}: {fmt_ms(p50)} ms",
                )
            )
    print(
        table(
            [
                "conversation",
                "scenario",
                "messages (start -> end)",
                "scenario seen",
                "window read",
                "p50 ms",
                "p99 ms",
                f"p50 <= {FIRST_EVENT_P50_MS:.0f} ms",
            ],
            table_rows,
        )
    )
    return checks


def report_throughput(
    main: list[Rate], extra: list[Rate], bench: Throughput, events: int, repeats: int
) -> list[tuple[bool, str]]:
    anchor, _log, off, on = main
    print(
        f"\n(b) Throughput: one run of {events:,} deltas (+2 events), provider yields after "
        f"every delta; median of {repeats}\n"
    )
    rows = []
    for rate in main:
        rows.append(
            [
                rate.label,
                f"{rate.median:,.0f}",
                f"{min(rate.values):,.0f} - {max(rate.values):,.0f}",
                f"{rate.median / anchor.median:.2f}",
            ]
        )
    print(table(["loop", "events/s (median)", "range", "/ anchor"], rows))
    flushes = statistics.median(f for f, _ in bench.flushes) if bench.flushes else 0
    written = statistics.median(c for _, c in bench.flushes) if bench.flushes else 0
    final = events * len(DELTA_TEXT)
    print(
        f"\npersistence on / off = {on.median / off.median:.2f}; per persistence-on run "
        f"(median): {flushes:.0f} intermediate flushes rewriting {written / 1e6:.1f} MB of "
        f"answer text in total (final answer {final / 1e3:.0f} kB)"
    )
    print("\nInformational (not gated):\n")
    rows = [
        [r.label, f"{r.median:,.0f}", f"{min(r.values):,.0f} - {max(r.values):,.0f}"] for r in extra
    ]
    print(table(["loop", "events/s (median)", "range"], rows))
    ratio = on.median / off.median
    return [
        (
            on.median >= EVENTS_PER_S,
            f"events/s through the engine, persistence on >= {EVENTS_PER_S:,}: {on.median:,.0f}",
        ),
        (
            ratio >= ON_OFF_RATIO,
            f"persistence on >= {ON_OFF_RATIO:.0%} of off: {ratio:.0%} "
            f"({on.median:,.0f} / {off.median:,.0f})",
        ),
    ]


# -- main ----------------------------------------------------------------------------------


def cleanup_redis(url: str, prefix: str) -> int:
    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()
    return len(keys)


async def run(args: argparse.Namespace, tmp: Path, redis_url: str | None, prefix: str) -> None:
    db_url = f"sqlite:///{tmp / 'bench.db'}"
    migrate(db_url)
    write_agent(tmp)
    settings = load_settings(
        database_url=db_url,
        data_dir=tmp,
        redis_url=redis_url,
        redis_prefix=prefix,
        demo_delay_ms=0,
    )
    services = await open_services(settings)
    try:
        print(
            f"hot window: {services.memory.hot.name}; run events: {type(services.events).__name__}"
        )
        print(
            f"settings: flush every {settings.flush_interval_ms:.0f} ms or "
            f"{settings.flush_chars} chars, context window {settings.context_window}\n"
        )
        sizes = [int(s) for s in args.sizes.split(",")]
        profile = cProfile.Profile() if args.profile else None
        checks: list[tuple[bool, str]] = []
        if args.profile != "throughput":
            if profile:
                profile.enable()
            rows = await measure_first_events(services, sizes, args.runs, args.warmup)
            if profile:
                profile.disable()
            checks += report_first_events(rows, args.runs)
        if args.profile != "first":
            if profile:
                profile.enable()
            main, extra, bench = await measure_throughput(services, args.events, args.repeats)
            if profile:
                profile.disable()
            checks += report_throughput(main, extra, bench, args.events, args.repeats)
        print("\nTargets:\n")
        for ok, text in checks:
            print(f"  {verdict(ok)}  {text}")
        print(f"\n{sum(ok for ok, _ in checks)}/{len(checks)} targets met.")
        if profile:
            print(f"\ncProfile ({args.profile}), top 30 by cumulative time:\n")
            pstats.Stats(profile, stream=sys.stdout).sort_stats("cumulative").print_stats(30)
    finally:
        await services.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", action="store_true", help="hot window + run events on Redis")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--runs", type=int, default=300, help="first-event runs per row")
    parser.add_argument("--warmup", type=int, default=20, help="untimed runs before each row")
    parser.add_argument("--sizes", default="10,10000", help="stored messages (default 10,10000)")
    parser.add_argument("--events", type=int, default=50_000, help="deltas per throughput run")
    parser.add_argument(
        "--repeats",
        type=int,
        help="throughput repeats, median reported (default 5; 3 with --redis, to stay ~2 min)",
    )
    parser.add_argument(
        "--profile",
        choices=["first", "throughput"],
        help="measure only that part under cProfile and print the top functions",
    )
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 3 if args.redis else 5
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    redis_url = args.redis_url if args.redis else None
    prefix = f"lumina-bench:{uuid.uuid4().hex[:8]}"
    flags = " --redis" if args.redis else ""
    print(
        f"== bench/engine.py{flags} --runs {args.runs} --events {args.events} "
        f"--repeats {args.repeats}"
    )
    print(f"date: {date.today().isoformat()}   machine: {machine_line()}")
    extra = ""
    if redis_url:
        extra = f", redis-server {redis.Redis.from_url(redis_url).info('server')['redis_version']}"
    print(
        f"python {platform.python_version()}, SQLAlchemy {sa.__version__}, SQLite "
        f"{__import__('sqlite3').sqlite_version} (temp file, WAL){extra}"
    )
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="lumina-bench-engine-") as tmp_name:
            asyncio.run(run(args, Path(tmp_name), redis_url, prefix))
    finally:
        if redis_url:
            removed = cleanup_redis(redis_url, prefix)
            print(f"\n(redis: removed {removed} keys under {prefix}:*)")
    print(f"(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
