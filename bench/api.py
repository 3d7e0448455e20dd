"""API benchmark: the real server over loopback, next to a bare Starlette SSE anchor.

    python bench/api.py [--samples N] [--streams N] [--idle N] [--db BACKEND] [--quick]

Lumina runs as in production (``reflex run --env prod --backend-only``: granian, one
worker) through the tests' AppServer: its own work folder, a migrated database (temp
SQLite, or ``--db postgresql|mariadb``), data/agents, the in-process hot window, the demo
model (agent ``assistant``); a fresh server per test. The anchor: a bare Starlette
``StreamingResponse`` under the same granian sending the frames Lumina sent for the same
task (recorded from it) at the same cadence. The client: httpx here, its heap frozen.

1. First SSE byte, instant model: 10 concurrent clients each sending ``--samples``/10
   ``POST /api/v1/agents/assistant/execute/stream`` in a new conversation, in two halves
   alternating with the anchor; then 1 client. Server CPU per stream = the server's
   process group, each process's CPU clock (``_servers.group_cpu_s``). Targets are
   checked on Lumina and on Lumina minus the anchor.
   Beside them, on the same server, the agent ``bare`` (written by this script: no
   memory, no tools, no title proposal): what the request, the run and its two commits
   cost without the work ``assistant``'s memory adds after an answer (title, long-term
   memories read and extracted, summary check). It still embeds its two messages for
   search, as every agent whose ``embeddings`` are not ``off`` does, in batches across
   turns (a third commit): 0.35-0.44 ms of its ~2.7 ms (12-07). And on the anchor's server,
   ``/durable``: the same frames after the durable minimum of a turn, its two commits on
   Lumina's SQLite schema with plain ``sqlite3`` (bench/_sse_anchor.py; SQLite whatever
   ``--db`` says), so ``bare`` ÷ it is what Lumina's layers cost over that minimum.
2. Cadence, 10 ms per word (a "/long" answer, ~430 frames): ``--streams`` concurrent
   streams; client-side gaps between frames (frames read together count as 0), also by
   position (the last gap waits for the final write); errors = non-200, exceptions, a
   missing ``done`` or a frame count other than recorded.
3. Idle memory per open stream: runs that never get past their first event, one
   ``GET /api/v1/runs/{runId}/stream`` each held open; (RSS with the streams open - RSS
   before) / N over the server's process group. The anchor holds N ``GET /idle``.

The targets are a report; two guards (#44) set the exit status, 1 when crossed: ``bare``'s
server CPU per stream over ``/durable``'s above 3.5x, and Lumina's first-byte overhead
over the anchor at 10 clients above 10 ms p50.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import granian
import httpx
import sqlalchemy as sa
import starlette
from _common import Checks, fmt_ms, fmt_ratio, header, note, parse_args, percentile, table
from _servers import app_server, database, group_cpu_s, group_rss_kb
from _sse_anchor import anchor_server

V1 = "/api/v1/agents/assistant"
BARE = "/api/v1/agents/bare"
BARE_AGENT = {"name": "Bare", "description": "bench/api.py: no memory, tools or titles",
              "titles": False}  # fmt: skip
SHORT_TASK = "Hello, how are you today?"
LONG_TASK = "Please write a long answer /long"
CADENCE_MS = 10
CLIENTS = 10
SETTLE_S = 0.3

FIRST_BYTE_P50_MS = 15.0
FIRST_BYTE_P99_MS = 50.0
OVERHEAD_P50_MS, OVERHEAD_P99_MS = 5.0, 20.0  # #18: what Lumina adds over the anchor
CPU_PER_STREAM_MAX = 2.0  # #18: server CPU per short stream / the anchor's
# #44: guards, not targets. The script exits 1 when either is crossed: the agent ``bare``'s
# server CPU per stream over the two-commit anchor's (``/durable``: the same frames after
# a turn's two commits with plain sqlite3), and what Lumina adds to the first byte at
# CLIENTS clients (Lumina - the byte-only anchor, p50).
GUARD_BARE_OVER_DURABLE = 3.5
GUARD_OVERHEAD_P50_MS = 10.0
# Every loopback client is one owner, capped at 32 open streams and 16 runs going at once,
# and one address, capped at 256 open requests (docs/SECURITY.md): the cadence and
# idle-memory tests hold 100 and 200 at once (--idle may ask for more).
LOOPBACK_CAPS = {
    "LUMINA_MAX_STREAMS_PER_OWNER": "1000",
    "LUMINA_MAX_ACTIVE_RUNS_PER_OWNER": "1000",
    "LUMINA_MAX_REQUESTS_PER_ADDRESS": "0",
}
GAP_P99_MS = 25.0
IDLE_KB_PER_STREAM = 40.0


def record_frames(base: str, task: str) -> list[str]:
    """The SSE frames of one execute/stream in a new conversation, as Lumina sent them."""
    resp = httpx.post(f"{base}{V1}/execute/stream", params={"task": task}, timeout=60)
    resp.raise_for_status()
    return [f + "\n\n" for f in resp.text.split("\n\n") if f]


# -- 1. first byte -------------------------------------------------------------------------


@dataclass
class FirstByte:
    ns: list[int] = field(default_factory=list)
    errors: int = 0
    requests: int = 0
    wall_s: float = 0.0
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0

    def ms(self, p: float) -> float:
        return percentile(self.ns, p) / 1e6

    def cpu_ms(self, server: bool = True) -> float:
        return (self.server_cpu_s if server else self.client_cpu_s) / max(self.requests, 1) * 1e3


async def first_byte(
    out: FirstByte, base: str, path: str, params: dict, pgid: int, clients: int, per_client: int
) -> None:
    """``clients`` loops of 2 warm-up then ``per_client`` streams, added to ``out``."""
    cpu0, client0 = group_cpu_s(pgid), time.process_time()

    async def client_loop() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            for j in range(2 + per_client):
                first = None
                t0 = time.perf_counter_ns()
                try:
                    async with client.stream("POST", path, params=params) as resp:
                        body = bytearray()
                        async for chunk in resp.aiter_raw():
                            first = first or time.perf_counter_ns()
                            body += chunk
                    ok = resp.status_code == 200 and b'"done": true' in body
                except httpx.HTTPError:
                    ok = False
                out.requests += 1
                if j >= 2 and ok and first:
                    out.ns.append(first - t0)
                elif j >= 2:
                    out.errors += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(client_loop() for _ in range(clients)))
    out.wall_s += time.perf_counter() - t0
    out.client_cpu_s += time.process_time() - client0
    # What the last answers set off (vectors, titles: gathered for 50 ms) is theirs, not
    # the next side's: counted after it has settled.
    await asyncio.sleep(SETTLE_S)
    out.server_cpu_s += group_cpu_s(pgid) - cpu0


# -- 2. cadence ----------------------------------------------------------------------------


@dataclass
class Cadence:
    gaps: dict[str, list[int]] = field(
        default_factory=lambda: {"all": [], "first": [], "middle": [], "last": []}
    )
    frames: int = 0
    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0
    server_cpu_s: float = 0.0

    def gap_ms(self, p: float, which: str = "all") -> float:
        return percentile(self.gaps[which], p) / 1e6

    def gap_cell(self, which: str) -> str:
        values = self.gaps[which]
        top = fmt_ms(max(values) / 1e6) if values else "-"
        return f"{fmt_ms(self.gap_ms(50, which))} / {fmt_ms(self.gap_ms(99, which))} / {top}"


async def cadence(base: str, path: str, params: dict, streams: int, expected: int, pgid: int):
    out = Cadence()
    limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)

    def error(kind: str) -> None:
        out.errors[kind] = out.errors.get(kind, 0) + 1

    async def one(client: httpx.AsyncClient) -> None:
        gaps: list[int] = []
        frames, last_frame, buf, last = 0, b"", b"", None
        try:
            async with client.stream("POST", path, params=params) as resp:
                if resp.status_code != 200:
                    return error(f"HTTP {resp.status_code}")
                async for chunk in resp.aiter_raw():
                    now = time.perf_counter_ns()
                    buf += chunk
                    complete = buf.count(b"\n\n")
                    if not complete:
                        continue
                    *done, buf = buf.split(b"\n\n")
                    last_frame = done[-1]
                    for k in range(complete):
                        if last is not None:
                            gaps.append(now - last if k == 0 else 0)
                        last = now
                    frames += complete
        except httpx.HTTPError as exc:
            return error(type(exc).__name__)
        if b'"done": true' not in last_frame:
            error("no done frame")
        elif frames != expected:
            error(f"{frames} frames, expected {expected}")
        else:
            out.ok += 1
        out.frames += frames
        out.gaps["all"] += gaps
        if len(gaps) >= 2:
            out.gaps["first"].append(gaps[0])
            out.gaps["middle"] += gaps[1:-1]
            out.gaps["last"].append(gaps[-1])

    timeout = httpx.Timeout(120, connect=30)
    async with httpx.AsyncClient(base_url=base, timeout=timeout, limits=limits) as client:
        cpu0, t0 = group_cpu_s(pgid), time.perf_counter()
        await asyncio.gather(*(one(client) for _ in range(streams)))
        out.wall_s = time.perf_counter() - t0
        out.server_cpu_s = group_cpu_s(pgid) - cpu0
    return out


# -- 3. idle memory ------------------------------------------------------------------------


@dataclass
class Idle:
    n: int
    base_kb: int = 0  # before
    runs_kb: int = 0  # after starting the runs (Lumina; the anchor has none)
    open_kb: int = 0  # with the streams open
    opened: int = 0

    @property
    def per_stream_kb(self) -> float:
        return (self.open_kb - self.runs_kb) / self.n


async def idle_memory(
    base: str, pgid: int, n: int, settle: float, paths: Callable[..., Awaitable[list[str]]]
) -> Idle:
    """``paths(client, count)`` starts what the streams follow and returns their paths."""
    out = Idle(n)
    limits = httpx.Limits(max_connections=n + 20, max_keepalive_connections=n + 20)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as client:

        async def hold(count: int) -> int:
            sem, opened = asyncio.Semaphore(20), 0

            async def one(path: str, stack: contextlib.AsyncExitStack) -> None:
                nonlocal opened
                async with sem:
                    with contextlib.suppress(httpx.HTTPError, StopAsyncIteration):
                        resp = await stack.enter_async_context(client.stream("GET", path))
                        chunks = resp.aiter_raw()
                        await anext(chunks)  # the first frame: the stream is established
                        stack.push_async_callback(chunks.aclose)
                        opened += resp.status_code == 200

            started = await paths(client, count)
            await asyncio.sleep(settle)
            out.runs_kb = group_rss_kb(pgid)
            async with contextlib.AsyncExitStack() as stack:
                await asyncio.gather(*(one(p, stack) for p in started))
                await asyncio.sleep(settle)
                out.open_kb = group_rss_kb(pgid)
            return opened

        await hold(10)  # warm-up: every code path once
        await asyncio.sleep(settle)
        out.base_kb = group_rss_kb(pgid)
        out.opened = await hold(n)
    return out


async def lumina_runs(client: httpx.AsyncClient, count: int) -> list[str]:
    sem = asyncio.Semaphore(10)

    async def one(i: int) -> str:
        async with sem:
            resp = await client.post(f"{V1}/execute", params={"task": f"idle stream {i}"})
            return f"/api/v1/runs/{resp.raise_for_status().json()['runId']}/stream"

    return list(await asyncio.gather(*(one(i) for i in range(count))))


async def anchor_idle(client: httpx.AsyncClient, count: int) -> list[str]:
    return ["/idle"] * count


# -- report --------------------------------------------------------------------------------


def report(
    fb: dict[str, FirstByte], cad: dict[str, Cadence], mem: dict[str, Idle], args
) -> tuple[Checks, Checks]:
    """Print the figures; the targets (a report) and the guards (the exit status)."""
    checks = Checks()
    lum, anc = fb["lumina"], fb["anchor"]
    print(
        f"\n1. First SSE byte, instant model, {len(lum.ns)} samples a side (a new conversation "
        "per request); CPU per stream: the server's process group and this client\n"
    )
    rows = []
    names = {"lumina": "Lumina execute/stream", "bare": "Lumina, agent bare", "anchor": "anchor",
             "durable": "anchor + 2 SQLite commits"}  # fmt: skip
    keys = ("lumina", "bare", "anchor", "durable")
    for key in (*keys, *(f"{k} 1" for k in keys)):
        r = fb[key]
        name = names[key.split()[0]] + (
            ", 1 client" if key.endswith("1") else f", {CLIENTS} clients"
        )
        top = fmt_ms(max(r.ns) / 1e6) if r.ns else "-"
        rows.append([name, fmt_ms(r.ms(50)), fmt_ms(r.ms(99)), top, r.errors,
                     f"{r.requests / r.wall_s:,.0f}", fmt_ms(r.cpu_ms()),
                     fmt_ms(r.cpu_ms(server=False))])  # fmt: skip
    bare = fb["bare"]
    durable = fb["durable"]
    rows.insert(4, ["Lumina - anchor", fmt_ms(lum.ms(50) - anc.ms(50)),
                    fmt_ms(lum.ms(99) - anc.ms(99)), "", "", "",
                    fmt_ratio(lum.cpu_ms() / anc.cpu_ms()), ""])  # fmt: skip
    rows.insert(5, ["bare - anchor", fmt_ms(bare.ms(50) - anc.ms(50)),
                    fmt_ms(bare.ms(99) - anc.ms(99)), "", "", "",
                    fmt_ratio(bare.cpu_ms() / anc.cpu_ms()), ""])  # fmt: skip
    rows.insert(6, ["bare - anchor + 2 SQLite commits", fmt_ms(bare.ms(50) - durable.ms(50)),
                    fmt_ms(bare.ms(99) - durable.ms(99)), "", "", "",
                    fmt_ratio(bare.cpu_ms() / durable.cpu_ms()), ""])  # fmt: skip
    heads = ["server", "p50 ms", "p99 ms", "max ms", "errors", "streams/s"]
    print(table([*heads, "server CPU ms", "client CPU ms"], rows))
    for p, target in ((50, FIRST_BYTE_P50_MS), (99, FIRST_BYTE_P99_MS)):
        checks.add(
            lum.ms(p) <= target,
            f"first byte p{p} <= {target:.0f} ms: {fmt_ms(lum.ms(p))} ms "
            f"(anchor {fmt_ms(anc.ms(p))})",
        )
        overhead = lum.ms(p) - anc.ms(p)
        checks.add(
            overhead <= target,
            f"server overhead to the first byte (Lumina - anchor) p{p} <= {target:.0f} ms: "
            f"{fmt_ms(overhead)} ms",
        )

    for p, target in ((50, OVERHEAD_P50_MS), (99, OVERHEAD_P99_MS)):
        overhead = lum.ms(p) - anc.ms(p)
        checks.add(
            overhead <= target,
            f"#18: first-byte overhead over the anchor at {CLIENTS} clients, p{p} <= "
            f"{target:.0f} ms: {fmt_ms(overhead)} ms",
        )
    cpu = lum.cpu_ms() / anc.cpu_ms()
    checks.add(
        cpu <= CPU_PER_STREAM_MAX,
        f"#18: server CPU per short stream <= {CPU_PER_STREAM_MAX:.0f}x the anchor: "
        f"{fmt_ratio(cpu)} ({fmt_ms(lum.cpu_ms())} vs {fmt_ms(anc.cpu_ms())} ms)",
    )
    guards = Checks()
    bare_ratio = bare.cpu_ms() / durable.cpu_ms()
    guards.add(
        bare_ratio <= GUARD_BARE_OVER_DURABLE,
        f"agent bare's server CPU per stream <= {GUARD_BARE_OVER_DURABLE}x the two-commit "
        f"anchor: {fmt_ratio(bare_ratio)} ({fmt_ms(bare.cpu_ms())} vs "
        f"{fmt_ms(durable.cpu_ms())} ms)",
    )
    overhead = lum.ms(50) - anc.ms(50)
    guards.add(
        overhead <= GUARD_OVERHEAD_P50_MS,
        f"first-byte overhead at {CLIENTS} clients (Lumina - anchor) p50 <= "
        f"{GUARD_OVERHEAD_P50_MS:.0f} ms: {fmt_ms(overhead)} ms ({fmt_ms(lum.ms(50))} vs "
        f"{fmt_ms(anc.ms(50))} ms)",
    )

    lum, anc = cad["lumina"], cad["anchor"]
    print(f"\n2. Cadence: {args.streams} concurrent streams, a frame every {CADENCE_MS} ms\n")
    rows = [
        [name, f"{r.ok}/{args.streams}", sum(r.errors.values()), r.gap_cell("all"),
         f"{r.wall_s:.1f}", f"{r.server_cpu_s / r.wall_s:.0%}",
         f"{r.server_cpu_s / max(r.frames, 1) * 1e6:,.0f}"]
        for name, r in (("Lumina execute/stream", lum), ("anchor", anc))
    ]  # fmt: skip
    heads = ["server", "complete", "errors", "gap p50 / p99 / max ms", "wall s", "server CPU"]
    print(table([*heads, "server CPU us/frame"], rows))
    for name, r in (("Lumina", lum), ("anchor", anc)):
        if r.errors:
            print(f"  {name} errors: {r.errors}")
    print("\nGaps by position (p50 / p99 / max ms):\n")
    rows = [
        [label, lum.gap_cell(which), anc.gap_cell(which)]
        for which, label in (
            ("first", "session -> first chunk"),
            ("middle", "chunk -> chunk"),
            ("last", "last chunk -> done (after the final write)"),
        )
    ]
    print(table(["gap", "Lumina", "anchor"], rows))
    checks.add(
        lum.gap_ms(99) <= GAP_P99_MS,
        f"inter-event gap p99 <= {GAP_P99_MS:.0f} ms at {args.streams} streams: "
        f"{fmt_ms(lum.gap_ms(99))} ms (anchor {fmt_ms(anc.gap_ms(99))})",
    )
    checks.add(
        not lum.errors and lum.ok == args.streams,
        f"no errors at {args.streams} streams: {lum.ok}/{args.streams} complete, "
        f"errors {lum.errors or 0}",
    )

    lum, anc = mem["lumina"], mem["anchor"]
    print(f"\n3. Idle memory: {args.idle} open streams (server process group RSS, KB)\n")
    rows = [
        ["Lumina runs/{id}/stream", f"{lum.opened}/{lum.n}", f"{lum.base_kb:,}",
         f"{lum.runs_kb:,}", f"{lum.open_kb:,}", f"{(lum.runs_kb - lum.base_kb) / lum.n:.1f}",
         f"{lum.per_stream_kb:.1f}"],
        ["anchor /idle", f"{anc.opened}/{anc.n}", f"{anc.base_kb:,}", "-", f"{anc.open_kb:,}",
         "-", f"{anc.per_stream_kb:.1f}"],
    ]  # fmt: skip
    heads = ["server", "open", "RSS before", "after N runs", "streams open", "KB/run"]
    print(table([*heads, "KB/stream"], rows))
    checks.add(
        lum.per_stream_kb <= IDLE_KB_PER_STREAM and lum.opened == lum.n,
        f"idle memory per open stream <= {IDLE_KB_PER_STREAM:.0f} KB: {lum.per_stream_kb:.1f} "
        f"KB ({lum.opened}/{lum.n} open; anchor {anc.per_stream_kb:.1f} KB)",
    )
    return checks, guards


# -- main ----------------------------------------------------------------------------------


async def measure(args, tmp: Path, db_url: str | None) -> tuple[Checks, Checks]:
    sides_1 = ("lumina", "bare", "anchor", "durable")
    fb = {k: FirstByte() for side in sides_1 for k in (side, f"{side} 1")}
    per_client = max(1, args.samples // CLIENTS // 2)
    solo = max(10, args.samples // 6)
    with contextlib.ExitStack() as stack:
        env = {"LUMINA_DEMO_DELAY_MS": "0", **LOOPBACK_CAPS}
        lumina = stack.enter_context(app_server(tmp / "instant", env=env, database_url=db_url))
        bare = lumina.data_dir / "agents" / "bare"
        bare.mkdir()
        (bare / "config.json").write_text(json.dumps(BARE_AGENT))
        frames = {"short": record_frames(lumina.url, SHORT_TASK)}
        frames["long"] = record_frames(lumina.url, LONG_TASK)
        anchor_db = sa.engine.make_url(stack.enter_context(database("sqlite", tmp))).database
        anchor, apgid = stack.enter_context(anchor_server(tmp / "anchor", frames, anchor_db))
        sides = {
            "lumina": (lumina.url, f"{V1}/execute/stream", {"task": SHORT_TASK}, lumina.proc.pid),
            "bare": (lumina.url, f"{BARE}/execute/stream", {"task": SHORT_TASK}, lumina.proc.pid),
            "anchor": (anchor, "/stream", {"kind": "short"}, apgid),
            "durable": (anchor, "/durable", {"task": SHORT_TASK}, apgid),
        }
        for _ in range(2):  # halves alternate, so a change in load hits both sides alike
            for side, where in sides.items():
                await first_byte(fb[side], *where, clients=CLIENTS, per_client=per_client)
        for side, where in sides.items():  # the unloaded path
            await first_byte(fb[f"{side} 1"], *where, clients=1, per_client=solo)
        long = len(frames["long"])
        params = {"kind": "long", "delay_ms": CADENCE_MS}
        cad = {"anchor": await cadence(anchor, "/stream", params, args.streams, long, apgid)}
        anchor_mem = await idle_memory(anchor, apgid, args.idle, args.settle, anchor_idle)
    note("first byte, anchor cadence and idle memory done")
    env = {"LUMINA_DEMO_DELAY_MS": str(CADENCE_MS), **LOOPBACK_CAPS}
    with app_server(tmp / "cadence", env=env, database_url=db_url) as lumina:
        where = (lumina.url, f"{V1}/execute/stream", {"task": LONG_TASK})
        cad["lumina"] = await cadence(*where, args.streams, long, lumina.proc.pid)
    env = {"LUMINA_DEMO_DELAY_MS": "600000", **LOOPBACK_CAPS}  # runs never pass their first event
    with app_server(tmp / "idle", env=env, database_url=db_url) as lumina:
        mem = await idle_memory(lumina.url, lumina.proc.pid, args.idle, args.settle, lumina_runs)
    mem = {"lumina": mem, "anchor": anchor_mem}
    return report(fb, cad, mem, args)


def options(parser) -> None:
    parser.add_argument("--samples", type=int, default=300, help="first-byte samples a side")
    parser.add_argument("--streams", type=int, default=100, help="concurrent cadence streams")
    parser.add_argument("--idle", type=int, default=200, help="idle streams held open")
    parser.add_argument("--db", choices=["sqlite", "postgresql", "mariadb"], default="sqlite")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds before reading RSS")


def main(argv: list[str] | None = None) -> int:
    quick = {"samples": 40, "streams": 10, "idle": 20, "settle": 0.3}
    args = parse_args(__doc__, options, quick, argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    inherited = [k for k in os.environ if k.startswith("LUMINA_")]
    for key in inherited:  # the servers get only the settings chosen here
        del os.environ[key]
    header(
        "api.py",
        args,
        f"granian {granian.__version__}, starlette {starlette.__version__}, httpx "
        f"{httpx.__version__}; Lumina on {args.db}, in-process hot window, 1 granian worker"
        + (f" (ignored from the environment: {', '.join(inherited)})" if inherited else ""),
    )
    started = time.perf_counter()
    gc.freeze()
    with (
        tempfile.TemporaryDirectory(prefix="lumina-bench-api-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        db_url = None
        if args.db != "sqlite":
            db_url = stack.enter_context(database(args.db, Path(tmp)))
        checks, guards = asyncio.run(measure(args, Path(tmp), db_url))
    checks.print()
    print("\nGuards (#44: the script exits 1 when one fails):\n")
    for ok, text in guards.items:
        print(f"  {'PASS' if ok else 'FAIL'}  {text}")
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0 if all(ok for ok, _ in guards.items) else 1


if __name__ == "__main__":
    sys.exit(main())
