"""API benchmark: the real server over loopback, next to a bare Starlette SSE anchor.

    .venv/bin/python bench/api.py [--samples N] [--streams N] [--idle N] [--db BACKEND]
    .venv/bin/python bench/api.py --profile N

Lumina runs exactly as in production (``reflex run --env prod --backend-only``: Reflex's
granian, one worker) through ``tests/server.py``'s AppServer: a temp work folder, a
migrated temp SQLite database, a copy of data/agents, the in-process hot window, the
demo provider (agent ``assistant``). The anchor is a bare Starlette app with a
``StreamingResponse``, served by the same granian (``--interface asgi --workers 1``),
that emits byte-identical v1 SSE frames (the same demo answer) at the same cadence.
Every measurement runs against both; the client is httpx in this process.

1. First SSE byte, instant provider (LUMINA_DEMO_DELAY_MS=0): 10 concurrent clients,
   each doing ``--samples``/10 sequential ``POST /api/v1/agents/assistant/execute/stream``
   in a new conversation (one keep-alive connection per client); time from sending the
   request to the first body byte; every stream is read to its ``done`` frame. Then the
   same with one client (the unloaded path). Server CPU per stream is the server's process
   group (/proc), client CPU this process's; the targets are checked on Lumina's figures
   and on Lumina minus the anchor (what the server adds over a bare StreamingResponse).
2. Cadence (LUMINA_DEMO_DELAY_MS=10, a "/long" task: ~440 words, one frame per word):
   ``--streams`` concurrent streams; client-side gaps between consecutive frames (frames
   that arrive in one read count as gap 0); errors = non-200, exceptions, a missing
   ``done`` frame or a frame count other than expected. Gaps are also shown by position
   (session -> first chunk, chunk -> chunk, last chunk -> done, which waits for the final
   write). Server CPU per frame comes from /proc (utime + stime of the server's process
   group).
3. Idle memory per open stream (LUMINA_DEMO_DELAY_MS=600000, so runs never get past their
   first event): ``--idle`` runs started with ``POST .../execute``, then one
   ``GET /api/v1/runs/{runId}/stream`` per run held open after its first frame. Server
   RSS = sum of VmRSS over the server's process group (reflex CLI + granian worker);
   per stream = (RSS with streams open - RSS before opening them) / N. The anchor holds
   N ``GET /idle`` streams (one frame, then nothing).

``--db postgresql|mariadb`` gives the Lumina servers a throw-away database on the local
server instead of SQLite. ``--profile N`` starts no server: it drives ``create_api`` with
N execute/stream requests (10 concurrent) by direct ASGI calls under cProfile.

The script always exits 0: it is a report, the PASS/FAIL lines are for reading. Every
server it starts is stopped (process group) at the end, also on errors.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import granian  # noqa: E402
import httpx  # noqa: E402
import starlette  # noqa: E402
from _common import fmt_ms, machine_line, percentile, server_database, table, verdict  # noqa: E402

from lumina_app.agents.providers import demo_answer  # noqa: E402
from lumina_app.agents.registry import AgentRegistry  # noqa: E402
from lumina_app.api.sse import frame  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.server import VENV_BIN, AppServer  # noqa: E402

AGENT = "assistant"
SHORT_TASK = "Hello, how are you today?"
LONG_TASK = "Please write a long answer /long"
CADENCE_MS = 10
IDLE_DELAY_MS = 600_000
CLIENTS = 10

# Targets (printed as PASS/FAIL; the script always exits 0).
FIRST_BYTE_P50_MS = 15.0
FIRST_BYTE_P99_MS = 50.0
GAP_P99_MS = 25.0
IDLE_KB_PER_STREAM = 40.0

_WORDS = re.compile(r"\s*\S+\s*|\s+")  # the demo provider's word split

ANCHOR_APP = '''\
"""Bare Starlette SSE anchor for bench/api.py: frames from frames.json, nothing else."""
import asyncio
import json
import os

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route

with open(os.environ["ANCHOR_FRAMES"], encoding="utf-8") as f:
    FRAMES = {k: [x.encode() for x in v] for k, v in json.load(f).items()}
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


async def stream(request):
    frames = FRAMES[request.query_params.get("kind", "short")]
    delay = float(request.query_params.get("delay_ms", "0")) / 1000

    async def gen():
        yield frames[0]
        for chunk in frames[1:-1]:
            if delay:
                await asyncio.sleep(delay)
            yield chunk
        yield frames[-1]

    return StreamingResponse(gen(), media_type="text/event-stream", headers=HEADERS)


async def idle(request):
    async def gen():
        yield FRAMES["short"][0]
        await asyncio.Event().wait()

    return StreamingResponse(gen(), media_type="text/event-stream", headers=HEADERS)


async def ping(request):
    return PlainTextResponse("pong")


app = Starlette(
    routes=[
        Route("/stream", stream, methods=["POST"]),
        Route("/idle", idle),
        Route("/ping", ping),
    ]
)
'''


# -- processes -----------------------------------------------------------------------------


def group_pids(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid:  # state, ppid, pgrp, ...
            pids.append(int(entry.name))
    return pids


def group_rss_kb(pgid: int) -> int:
    total = 0
    for pid in group_pids(pgid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def group_cpu_s(pgid: int) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in group_pids(pgid):
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat[stat.rfind(")") + 2 :].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


class AnchorServer:
    """The bare Starlette app under granian, in its own process group."""

    def __init__(self, workdir: Path, frames: dict[str, list[str]]) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "anchor_app.py").write_text(ANCHOR_APP, encoding="utf-8")
        (workdir / "frames.json").write_text(json.dumps(frames), encoding="utf-8")
        self.log_path = workdir / "anchor.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> None:
        args = [
            str(VENV_BIN / "granian"),
            "--interface",
            "asgi",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
            "--log-level",
            "warning",
            "--working-dir",
            str(self.workdir),
            "anchor_app:app",
        ]
        env = dict(os.environ, ANCHOR_FRAMES=str(self.workdir / "frames.json"))
        self.proc = subprocess.Popen(
            args,
            cwd=self.workdir,
            env=env,
            stdout=self.log_path.open("ab"),
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"anchor exited early:\n{self.log_path.read_text()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/ping", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("anchor did not answer")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


class Servers:
    """Everything started here, stopped in reverse order whatever happens."""

    def __init__(self) -> None:
        self._started: list[tuple[str, Callable[[], None]]] = []

    def add(self, name: str, stop: Callable[[], None]) -> None:
        self._started.append((name, stop))

    def stop(self, name: str) -> None:
        for i, (n, stop) in enumerate(self._started):
            if n == name:
                stop()
                del self._started[i]
                return

    def stop_all(self) -> None:
        while self._started:
            _name, stop = self._started.pop()
            with contextlib.suppress(Exception):
                stop()


def lumina_server(tmp: Path, name: str, delay_ms: int, database_url: str | None) -> AppServer:
    server = AppServer(
        tmp / name,
        backend_only=True,
        env={"LUMINA_DEMO_DELAY_MS": str(delay_ms)},
        database_url=database_url,
    )
    t0 = time.perf_counter()
    server.start()
    print(f"  {name}: up in {time.perf_counter() - t0:.1f} s on {server.url}", file=sys.stderr)
    return server


def lumina_stop(server: AppServer) -> Callable[[], None]:
    def stop() -> None:
        server.stop()

    return stop


def lumina_kill(server: AppServer) -> Callable[[], None]:
    def kill() -> None:
        server.kill()

    return kill


# -- the frames Lumina sends, for the anchor -----------------------------------------------


def expected_frames(task: str) -> list[str]:
    """The v1 frames of a demo answer in a new conversation, as Lumina frames them."""
    agent = AgentRegistry(ROOT / "data" / "agents").get(AGENT)
    assert agent is not None, "data/agents/assistant is missing"
    messages = []
    if agent.system_prompt:
        messages.append({"role": "system", "content": agent.system_prompt})
    messages.append({"role": "user", "content": task})
    words = _WORDS.findall(demo_answer(agent.name, messages))
    conv, run = "0b6c1a52-7d1e-4f0a-9a53-3c2f5e1d2b7a", "run-0123456789abcdef"
    frames = [frame({"conversationId": conv, "runId": run, "scenario": "new"}, event_id=1)]
    frames += [frame({"chunk": w}, event_id=i) for i, w in enumerate(words, start=2)]
    frames.append(frame({"done": True, "messageId": 123456}, event_id=len(words) + 2))
    return [f.decode() for f in frames]


# -- 1. first byte -------------------------------------------------------------------------


@dataclass
class FirstByte:
    ns: list[int] = field(default_factory=list)
    errors: int = 0
    wall_s: float = 0.0
    requests: int = 0
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0

    def pct_ms(self, p: float) -> float:
        return percentile(self.ns, p) / 1e6


async def first_byte(
    base: str,
    path: str,
    params: dict,
    *,
    clients: int,
    per_client: int,
    warmup: int,
    pgid: int | None = None,
) -> FirstByte:
    out = FirstByte()
    cpu0 = group_cpu_s(pgid) if pgid else 0.0
    client0 = time.process_time()

    async def client_loop() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            for j in range(warmup + per_client):
                first = None
                t0 = time.perf_counter_ns()
                try:
                    async with client.stream("POST", path, params=params) as resp:
                        body = bytearray()
                        async for chunk in resp.aiter_raw():
                            if first is None:
                                first = time.perf_counter_ns()
                            body += chunk
                    ok = resp.status_code == 200 and b'"done": true' in body
                except httpx.HTTPError:
                    ok = False
                out.requests += 1
                if j < warmup:
                    continue
                if ok and first is not None:
                    out.ns.append(first - t0)
                else:
                    out.errors += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(client_loop() for _ in range(clients)))
    out.wall_s = time.perf_counter() - t0
    out.client_cpu_s = time.process_time() - client0
    if pgid:
        out.server_cpu_s = group_cpu_s(pgid) - cpu0
    return out


# -- 2. cadence ----------------------------------------------------------------------------


@dataclass
class Cadence:
    gaps_ns: list[int] = field(default_factory=list)
    first_ns: list[int] = field(default_factory=list)  # session frame -> first chunk
    middle_ns: list[int] = field(default_factory=list)  # chunk -> chunk
    last_ns: list[int] = field(default_factory=list)  # last chunk -> done (final write)
    frames: int = 0
    streams_ok: int = 0
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    durations_s: list[float] = field(default_factory=list)

    def gap_ms(self, p: float, which: str = "gaps") -> float:
        return percentile(getattr(self, f"{which}_ns"), p) / 1e6

    def error(self, kind: str) -> None:
        self.errors += 1
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1


async def cadence(
    base: str, path: str, params: dict, *, streams: int, expected: int, pgid: int
) -> Cadence:
    out = Cadence()
    limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
    timeout = httpx.Timeout(120, connect=30)

    async def one(client: httpx.AsyncClient) -> None:
        gaps: list[int] = []
        frames = 0
        last_frame = b""
        started = time.perf_counter()
        try:
            async with client.stream("POST", path, params=params) as resp:
                if resp.status_code != 200:
                    out.error(f"HTTP {resp.status_code}")
                    return
                buf = b""
                last = None
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
            out.error(type(exc).__name__)
            return
        if b'"done": true' not in last_frame:
            out.error("no done frame")
        elif frames != expected:
            out.error(f"{frames} frames, expected {expected}")
        else:
            out.streams_ok += 1
        out.gaps_ns.extend(gaps)
        if len(gaps) >= 2:
            out.first_ns.append(gaps[0])
            out.middle_ns.extend(gaps[1:-1])
            out.last_ns.append(gaps[-1])
        out.frames += frames
        out.durations_s.append(time.perf_counter() - started)

    async with httpx.AsyncClient(base_url=base, timeout=timeout, limits=limits) as client:
        cpu0, ccpu0, t0 = group_cpu_s(pgid), time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(client) for _ in range(streams)))
        out.wall_s = time.perf_counter() - t0
        out.server_cpu_s = group_cpu_s(pgid) - cpu0
        out.client_cpu_s = time.process_time() - ccpu0
    return out


# -- 3. idle memory ------------------------------------------------------------------------


@dataclass
class IdleMemory:
    n: int
    base_kb: int = 0  # before the runs (Lumina) / before the streams (anchor)
    runs_kb: int = 0  # after the runs are started (Lumina only)
    open_kb: int = 0  # with the streams open
    closed_kb: int = 0  # after closing them
    opened: int = 0
    errors: int = 0

    @property
    def per_stream_kb(self) -> float:
        return (self.open_kb - self.runs_kb) / self.n

    @property
    def per_run_kb(self) -> float:
        return (self.runs_kb - self.base_kb) / self.n


async def _open_streams(
    client: httpx.AsyncClient, paths: list[str], out: IdleMemory, stack: contextlib.AsyncExitStack
) -> None:
    sem = asyncio.Semaphore(20)

    async def one(path: str) -> None:
        async with sem:
            try:
                resp = await stack.enter_async_context(client.stream("GET", path))
                if resp.status_code != 200:
                    out.errors += 1
                    return
                chunks = resp.aiter_raw()
                await anext(chunks)  # the first frame: the stream is established
                stack.push_async_callback(chunks.aclose)
                out.opened += 1
            except (httpx.HTTPError, StopAsyncIteration):
                out.errors += 1

    await asyncio.gather(*(one(p) for p in paths))


async def idle_memory_lumina(base: str, pgid: int, n: int, settle_s: float) -> IdleMemory:
    out = IdleMemory(n)
    limits = httpx.Limits(max_connections=n + 20, max_keepalive_connections=n + 20)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as client:

        async def start_runs(count: int) -> list[str]:
            sem = asyncio.Semaphore(10)

            async def one(i: int) -> str:
                async with sem:
                    resp = await client.post(
                        f"/api/v1/agents/{AGENT}/execute", params={"task": f"idle stream {i}"}
                    )
                    resp.raise_for_status()
                    return resp.json()["runId"]

            return list(await asyncio.gather(*(one(i) for i in range(count))))

        # Warm-up: load every code path once (runs, open + close streams).
        warm = await start_runs(10)
        async with contextlib.AsyncExitStack() as stack:
            await _open_streams(client, [f"/api/v1/runs/{r}/stream" for r in warm], out, stack)
        out.opened = out.errors = 0
        await asyncio.sleep(settle_s)
        out.base_kb = group_rss_kb(pgid)
        run_ids = await start_runs(n)
        await asyncio.sleep(settle_s)
        out.runs_kb = group_rss_kb(pgid)
        async with contextlib.AsyncExitStack() as stack:
            await _open_streams(client, [f"/api/v1/runs/{r}/stream" for r in run_ids], out, stack)
            await asyncio.sleep(settle_s)
            out.open_kb = group_rss_kb(pgid)
        await asyncio.sleep(settle_s)
        out.closed_kb = group_rss_kb(pgid)
    return out


async def idle_memory_anchor(base: str, pgid: int, n: int, settle_s: float) -> IdleMemory:
    out = IdleMemory(n)
    limits = httpx.Limits(max_connections=n + 20, max_keepalive_connections=n + 20)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as client:
        async with contextlib.AsyncExitStack() as stack:
            await _open_streams(client, ["/idle"] * 10, out, stack)
        out.opened = out.errors = 0
        await asyncio.sleep(settle_s)
        out.base_kb = out.runs_kb = group_rss_kb(pgid)
        async with contextlib.AsyncExitStack() as stack:
            await _open_streams(client, ["/idle"] * n, out, stack)
            await asyncio.sleep(settle_s)
            out.open_kb = group_rss_kb(pgid)
        await asyncio.sleep(settle_s)
        out.closed_kb = group_rss_kb(pgid)
    return out


# -- report --------------------------------------------------------------------------------


def ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if b > 0 else "-"


def report(
    fb: dict[str, FirstByte],
    cad: dict[str, Cadence],
    mem: dict[str, IdleMemory],
    args: argparse.Namespace,
    long_frames: int,
) -> None:
    checks: list[tuple[bool, str]] = []
    lum, anc = fb["lumina"], fb["anchor"]
    print(
        f"\n1. First SSE byte, instant provider: {CLIENTS} concurrent clients, "
        f"{len(lum.ns)} samples each side (a new conversation per request); then 1 client "
        "(the unloaded path). CPU columns: per stream, server process group and this client\n"
    )
    rows = []
    labels = {
        "lumina": f"Lumina execute/stream, {CLIENTS} clients",
        "anchor": f"anchor StreamingResponse, {CLIENTS} clients",
        "lumina 1": "Lumina execute/stream, 1 client",
        "anchor 1": "anchor StreamingResponse, 1 client",
    }
    for key in ("lumina", "anchor", "lumina 1", "anchor 1"):
        r = fb[key]
        rows.append(
            [
                labels[key],
                str(len(r.ns)),
                fmt_ms(r.pct_ms(50)),
                fmt_ms(r.pct_ms(99)),
                fmt_ms(max(r.ns) / 1e6) if r.ns else "-",
                str(r.errors),
                f"{r.requests / r.wall_s:,.0f}",
                fmt_ms(r.server_cpu_s / max(r.requests, 1) * 1000),
                fmt_ms(r.client_cpu_s / max(r.requests, 1) * 1000),
            ]
        )
        if key == "anchor":
            rows.append(
                [
                    "Lumina / anchor",
                    "",
                    ratio(lum.pct_ms(50), anc.pct_ms(50)),
                    ratio(lum.pct_ms(99), anc.pct_ms(99)),
                    "",
                    "",
                    "",
                    ratio(lum.server_cpu_s / lum.requests, anc.server_cpu_s / anc.requests),
                    "",
                ]
            )
            rows.append(
                [
                    "Lumina - anchor (server overhead)",
                    "",
                    fmt_ms(lum.pct_ms(50) - anc.pct_ms(50)),
                    fmt_ms(lum.pct_ms(99) - anc.pct_ms(99)),
                    "",
                    "",
                    "",
                    "",
                    "",
                ]
            )
    print(
        table(
            [
                "server",
                "n",
                "p50 ms",
                "p99 ms",
                "max ms",
                "errors",
                "streams/s",
                "server CPU ms",
                "client CPU ms",
            ],
            rows,
        )
    )
    checks.append(
        (
            lum.pct_ms(50) <= FIRST_BYTE_P50_MS,
            f"first byte p50 <= {FIRST_BYTE_P50_MS:.0f} ms: "
            f"{fmt_ms(lum.pct_ms(50))} ms (anchor {fmt_ms(anc.pct_ms(50))})",
        )
    )
    checks.append(
        (
            lum.pct_ms(99) <= FIRST_BYTE_P99_MS,
            f"first byte p99 <= {FIRST_BYTE_P99_MS:.0f} ms: "
            f"{fmt_ms(lum.pct_ms(99))} ms (anchor {fmt_ms(anc.pct_ms(99))})",
        )
    )
    # The same targets on what the server adds: Lumina minus the anchor, which is the same
    # HTTP server, client and machine serving the same frames with no work behind them.
    for p, target in ((50, FIRST_BYTE_P50_MS), (99, FIRST_BYTE_P99_MS)):
        overhead = lum.pct_ms(p) - anc.pct_ms(p)
        checks.append(
            (
                overhead <= target,
                f"server overhead to the first byte (Lumina - anchor) p{p} <= {target:.0f} ms: "
                f"{fmt_ms(overhead)} ms",
            )
        )

    lum, anc = cad["lumina"], cad["anchor"]
    print(
        f"\n2. Cadence: {args.streams} concurrent streams, a frame every {CADENCE_MS} ms, "
        f"{long_frames} frames per stream\n"
    )
    rows = []
    for name, r in (("Lumina execute/stream", lum), ("anchor StreamingResponse", anc)):
        rows.append(
            [
                name,
                f"{r.streams_ok}/{args.streams}",
                str(r.errors),
                f"{len(r.gaps_ns):,}",
                fmt_ms(r.gap_ms(50)),
                fmt_ms(r.gap_ms(99)),
                fmt_ms(max(r.gaps_ns) / 1e6) if r.gaps_ns else "-",
                f"{r.wall_s:.1f}",
                f"{r.server_cpu_s / r.wall_s:.0%}",
                f"{r.server_cpu_s / max(r.frames, 1) * 1e6:,.0f}",
                f"{r.client_cpu_s / r.wall_s:.0%}",
            ]
        )
    rows.append(
        [
            "Lumina / anchor",
            "",
            "",
            "",
            ratio(lum.gap_ms(50), anc.gap_ms(50)),
            ratio(lum.gap_ms(99), anc.gap_ms(99)),
            "",
            ratio(lum.wall_s, anc.wall_s),
            "",
            ratio(lum.server_cpu_s / max(lum.frames, 1), anc.server_cpu_s / max(anc.frames, 1)),
            "",
        ]
    )
    print(
        table(
            [
                "server",
                "streams ok",
                "errors",
                "gaps",
                "gap p50 ms",
                "gap p99 ms",
                "gap max ms",
                "wall s",
                "server CPU",
                "server CPU us/frame",
                "client CPU",
            ],
            rows,
        )
    )
    for name, r in (("Lumina", lum), ("anchor", anc)):
        if r.error_kinds:
            print(f"  {name} errors: {r.error_kinds}")
    print("\nThe same gaps by position in the stream (p50 / p99 / max, ms):\n")
    rows = []
    for which, label in (
        ("first", "session -> first chunk"),
        ("middle", "chunk -> chunk"),
        ("last", "last chunk -> done (after the final write)"),
    ):
        cells = [label]
        for r in (lum, anc):
            values = getattr(r, f"{which}_ns")
            cells.append(
                f"{fmt_ms(r.gap_ms(50, which))} / {fmt_ms(r.gap_ms(99, which))} / "
                f"{fmt_ms(max(values) / 1e6) if values else '-'}"
            )
        rows.append(cells)
    print(table(["gap", "Lumina", "anchor"], rows))
    checks.append(
        (
            lum.gap_ms(99) <= GAP_P99_MS,
            f"inter-event gap p99 <= {GAP_P99_MS:.0f} ms at {args.streams} streams: "
            f"{fmt_ms(lum.gap_ms(99))} ms (anchor {fmt_ms(anc.gap_ms(99))})",
        )
    )
    checks.append(
        (
            lum.errors == 0 and lum.streams_ok == args.streams,
            f"no errors at {args.streams} streams: {lum.errors} errors, "
            f"{lum.streams_ok}/{args.streams} complete",
        )
    )

    lum, anc = mem["lumina"], mem["anchor"]
    print(f"\n3. Idle memory: {args.idle} open streams (server process group RSS, KB)\n")
    rows = [
        [
            "Lumina runs/{id}/stream",
            f"{lum.opened}/{lum.n}",
            f"{lum.base_kb:,}",
            f"{lum.runs_kb:,}",
            f"{lum.open_kb:,}",
            f"{lum.closed_kb:,}",
            f"{lum.per_run_kb:.1f}",
            f"{lum.per_stream_kb:.1f}",
        ],
        [
            "anchor /idle",
            f"{anc.opened}/{anc.n}",
            f"{anc.base_kb:,}",
            "-",
            f"{anc.open_kb:,}",
            f"{anc.closed_kb:,}",
            "-",
            f"{anc.per_stream_kb:.1f}",
        ],
        ["Lumina / anchor", "", "", "", "", "", "", ratio(lum.per_stream_kb, anc.per_stream_kb)],
    ]
    print(
        table(
            [
                "server",
                "open",
                "RSS before",
                "after N runs",
                "streams open",
                "streams closed",
                "KB/run",
                "KB/stream",
            ],
            rows,
        )
    )
    checks.append(
        (
            lum.per_stream_kb <= IDLE_KB_PER_STREAM and lum.opened == lum.n,
            f"idle memory per open stream <= {IDLE_KB_PER_STREAM:.0f} KB: "
            f"{lum.per_stream_kb:.1f} KB ({lum.opened}/{lum.n} open; anchor "
            f"{anc.per_stream_kb:.1f} KB)",
        )
    )

    print("\nTargets:\n")
    for ok, text in checks:
        print(f"  {verdict(ok)}  {text}")
    print(f"\n{sum(ok for ok, _ in checks)}/{len(checks)} targets met.")


# -- profile (in process, no HTTP) ---------------------------------------------------------


async def profile_in_process(tmp: Path, requests: int) -> None:
    """Where the server's time per execute/stream goes: ``create_api`` driven by direct
    ASGI calls (no granian, no Reflex wrapper, no client), 10 concurrent loops like test 1,
    under cProfile."""
    import cProfile
    import pstats
    import shutil
    from urllib.parse import urlencode

    from _common import migrate

    from lumina_app.api import create_api
    from lumina_app.composition import install, open_services
    from lumina_app.settings import load_settings

    shutil.copytree(ROOT / "data" / "agents", tmp / "data" / "agents")
    url = f"sqlite:///{tmp / 'profile.db'}"
    migrate(url)
    settings = load_settings(database_url=url, data_dir=tmp / "data", demo_delay_ms=0)
    services = await open_services(settings)
    install(services)
    app = create_api(settings)
    path = f"/api/v1/agents/{AGENT}/execute/stream"
    query = urlencode({"task": SHORT_TASK}).encode()
    bodies = 0

    async def call() -> None:
        nonlocal bodies
        finished = asyncio.Event()
        asked = False

        async def receive() -> dict:
            nonlocal asked
            if not asked:
                asked = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await finished.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            nonlocal bodies
            if message["type"] == "http.response.body":
                bodies += 1
                if not message.get("more_body", False):
                    finished.set()

        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query,
            "root_path": "",
            "headers": [(b"host", b"bench"), (b"content-length", b"0")],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
            "state": {},
        }
        await app(scope, receive, send)
        finished.set()

    async def loop(count: int) -> None:
        for _ in range(count):
            await call()

    try:
        await asyncio.gather(*(loop(3) for _ in range(CLIENTS)))  # warm-up
        bodies = 0
        profile = cProfile.Profile()
        per_loop = max(1, requests // CLIENTS)
        t0, cpu0 = time.perf_counter(), time.process_time()
        profile.enable()
        await asyncio.gather(*(loop(per_loop) for _ in range(CLIENTS)))
        profile.disable()
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        done = per_loop * CLIENTS
        print(
            f"\nIn-process profile: {done} execute/stream requests, {CLIENTS} concurrent, "
            "create_api on temp SQLite (no HTTP server, no Reflex wrapper)\n"
            f"wall {wall:.2f} s, CPU {cpu:.2f} s: {cpu / done * 1000:.2f} ms CPU per request "
            f"under cProfile, {bodies / done:.0f} body messages per request\n"
        )
        stats = pstats.Stats(profile, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
    finally:
        install(None)
        await services.close()


# -- main ----------------------------------------------------------------------------------


async def measure(args: argparse.Namespace, tmp: Path, servers: Servers) -> None:
    short, long = expected_frames(SHORT_TASK), expected_frames(LONG_TASK)
    anchor = AnchorServer(tmp / "anchor", {"short": short, "long": long})
    anchor.start()
    servers.add("anchor", anchor.stop)
    apgid = anchor.proc.pid
    per_client = max(1, args.samples // CLIENTS)
    v1 = f"/api/v1/agents/{AGENT}/execute/stream"

    fb: dict[str, FirstByte] = {}
    cad: dict[str, Cadence] = {}
    mem: dict[str, IdleMemory] = {}

    # 1. first byte
    db_url = None
    if args.db != "sqlite":
        db_url, cleanup = server_database(args.db)
        servers.add("database", cleanup)
    lumina = lumina_server(tmp, "lumina-instant", 0, db_url)
    servers.add("lumina", lumina_stop(lumina))
    # Alternate halves so a change in machine load hits both sides alike.
    half = dict(clients=CLIENTS, per_client=max(1, per_client // 2), warmup=2)
    parts: dict[str, list[FirstByte]] = {"lumina": [], "anchor": []}
    for _ in range(2):
        parts["lumina"].append(
            await first_byte(lumina.url, v1, {"task": SHORT_TASK}, pgid=lumina.proc.pid, **half)
        )
        parts["anchor"].append(
            await first_byte(anchor.url, "/stream", {"kind": "short"}, pgid=apgid, **half)
        )
    for side, results in parts.items():
        fb[side] = FirstByte(
            ns=[x for r in results for x in r.ns],
            errors=sum(r.errors for r in results),
            wall_s=sum(r.wall_s for r in results),
            requests=sum(r.requests for r in results),
            server_cpu_s=sum(r.server_cpu_s for r in results),
            client_cpu_s=sum(r.client_cpu_s for r in results),
        )
    # The same with one client: the unloaded path, no queueing behind other requests.
    solo = dict(clients=1, per_client=max(10, args.samples // 6), warmup=2)
    fb["lumina 1"] = await first_byte(
        lumina.url, v1, {"task": SHORT_TASK}, pgid=lumina.proc.pid, **solo
    )
    fb["anchor 1"] = await first_byte(anchor.url, "/stream", {"kind": "short"}, pgid=apgid, **solo)
    print("  first byte done", file=sys.stderr)
    servers.stop("lumina")

    # 2. cadence
    lumina = lumina_server(tmp, "lumina-cadence", CADENCE_MS, db_url)
    servers.add("lumina", lumina_stop(lumina))
    await first_byte(lumina.url, v1, {"task": SHORT_TASK}, clients=2, per_client=2, warmup=0)
    cad["lumina"] = await cadence(
        lumina.url,
        v1,
        {"task": LONG_TASK},
        streams=args.streams,
        expected=len(long),
        pgid=lumina.proc.pid,
    )
    print("  cadence (lumina) done", file=sys.stderr)
    servers.stop("lumina")
    cad["anchor"] = await cadence(
        anchor.url,
        "/stream",
        {"kind": "long", "delay_ms": CADENCE_MS},
        streams=args.streams,
        expected=len(long),
        pgid=apgid,
    )
    print("  cadence (anchor) done", file=sys.stderr)

    # 3. idle memory
    mem["anchor"] = await idle_memory_anchor(anchor.url, apgid, args.idle, args.settle)
    servers.stop("anchor")
    lumina = lumina_server(tmp, "lumina-idle", IDLE_DELAY_MS, db_url)
    servers.add("lumina", lumina_kill(lumina))  # 200 live runs: no graceful shutdown needed
    mem["lumina"] = await idle_memory_lumina(lumina.url, lumina.proc.pid, args.idle, args.settle)
    print("  idle memory done", file=sys.stderr)
    servers.stop("lumina")

    report(fb, cad, mem, args, len(long))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=300, help="first-byte samples per side")
    parser.add_argument("--streams", type=int, default=100, help="concurrent cadence streams")
    parser.add_argument("--idle", type=int, default=200, help="idle streams held open")
    parser.add_argument(
        "--db",
        choices=["sqlite", "postgresql", "mariadb"],
        default="sqlite",
        help="Lumina's database: a temp SQLite file (default) or a throw-away server database",
    )
    parser.add_argument(
        "--profile",
        type=int,
        metavar="N",
        help="instead: profile N execute/stream requests in process (no server) and exit",
    )
    parser.add_argument("--settle", type=float, default=1.0, help="seconds before reading RSS")
    args = parser.parse_args(argv)

    if args.profile:
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="lumina-bench-api-") as tmp_name:
            asyncio.run(profile_in_process(Path(tmp_name), args.profile))
        return 0
    inherited = [k for k in os.environ if k.startswith("LUMINA_")]
    for key in inherited:  # the servers get only the settings this benchmark chooses
        del os.environ[key]
    print(
        f"== bench/api.py --db {args.db} --samples {args.samples} --streams {args.streams} "
        f"--idle {args.idle}"
    )
    print(f"date: {date.today().isoformat()}   machine: {machine_line()}")
    print(
        f"python {platform.python_version()}, granian {granian.__version__}, starlette "
        f"{starlette.__version__}, httpx {httpx.__version__} (client, this process); "
        f"Lumina on {args.db}, in-process hot window, 1 granian worker"
    )
    if inherited:
        print(f"(ignored from the environment: {', '.join(inherited)})")
    started = time.perf_counter()
    # The client is measured with the servers: a full collection over everything this
    # process imported stalls it 20-100 ms on a slow machine. Frozen, it does not.
    gc.freeze()
    servers = Servers()
    try:
        with tempfile.TemporaryDirectory(prefix="lumina-bench-api-") as tmp_name:
            try:
                asyncio.run(measure(args, Path(tmp_name), servers))
            finally:
                servers.stop_all()
    finally:
        servers.stop_all()
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
