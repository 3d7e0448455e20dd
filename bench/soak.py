"""Endurance: a steady mixed load against the real server for minutes, with waves of slow
clients, reporting whether anything grows.

    python bench/soak.py [--minutes 10] [--workers 4] [--db sqlite|postgresql] [--quick]

The real app (``reflex run --env prod --backend-only``: granian, one worker) through the
tests' AppServer, its hot window and run events on a private redis-server, the demo model
at 5 ms a word, API keys on (one owner for the load, ten for the slow readers). ``--workers``
clients loop, each on its own conversations (a new one every 20 turns), 0.1 s apart:

* send       ``POST /api/v1/agents/assistant/execute/sync``;
* stream     ``POST .../execute/stream`` read to ``done``;
* reconnect  a stream dropped after its first chunk, then ``GET /api/v1/runs/{runId}/stream``
             with ``Last-Event-ID`` read to ``done`` (no chunk lost or repeated);
* list       ``GET /api/v1/conversations?limit=20`` and the conversation's last 40 messages.

An error is a status other than 2xx, an exception, a stream without ``done`` or a
reconnect that lost or repeated text. Every 5 s: RSS and open fds of the server's process
group (/proc), Redis ``used_memory``, SQL connections (PostgreSQL: ``pg_stat_activity``
for the database; SQLite: the server's fds open on the database files). Slopes are least
squares over the samples after ``--warmup`` seconds taken outside slow-client waves (and
over the last half alone).

What grows can be told apart with ``PYTHONPATH=bench/cache_probe PROBE_OUT=/tmp/caches``
in front of this command: the server then writes its caches' sizes, glibc's and SQLite's
heaps once a minute (``bench/cache_probe/sitecustomize.py``); ``PROBE_MEMRAY=600:600`` adds
a recording of every allocation over minutes 10-20, read by ``bench/cache_probe/leaks.py``.

Slow-client waves (every ``--wave-every`` s, ending before the last tenth of the run), each bounded
by a limit in docs/SECURITY.md; for each the time until the server closed them:

* slow headers   ``--slow`` sockets sending a request head one byte every 2 s
                 (header read timeout, ``LUMINA_HEADER_READ_TIMEOUT_SECONDS``, 10 s);
* slow bodies    ``--slow-bodies`` POSTs whose body arrives one byte every 2 s: they
                 count against the in-app connection cap until the body read timeout
                 (``LUMINA_BODY_READ_TIMEOUT_SECONDS``, 10 s) answers 408 and closes them;
                 held at most ``--body-hold`` s, then closed by the client;
* never-reading  ``--readers`` SSE streams (the ``/long`` answer, receive buffer 1 KB)
  readers        that are never read, spread over ten owners: 32 per owner
                 (``LUMINA_MAX_STREAMS_PER_OWNER``) then 429; the rest end with the run
                 or at the send timeout (``LUMINA_SSE_SEND_TIMEOUT_SECONDS``, 30 s). The
                 server's close is read from /proc/net/tcp (its end leaves ESTABLISHED:
                 a FIN queued behind unread data never reaches a reader that never reads);
                 held ``--reader-hold`` s, then closed by the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis
import sqlalchemy as sa
from _common import Checks, header, note, parse_args, percentile, table
from _servers import app_server, database, group_pids, group_rss_kb, redis_server
from _slow_clients import (
    AGENT,
    LOAD_KEY,
    SLOW_OWNERS,
    Wave,
    fds,
    slow_key,
    wave_of_slow_clients,
)

TASK = "Tell me something about keeping services healthy."


# -- load ---------------------------------------------------------------------------------


@dataclass
class Stats:
    """Operations and errors, by minute since the start."""

    t0: float
    lat: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    kinds: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: list[dict] = field(default_factory=list)
    first_errors: list[str] = field(default_factory=list)
    in_wave: bool = False  # samples taken during a slow-client wave stay out of the slopes

    def minute(self) -> int:
        return int((time.monotonic() - self.t0) // 60)

    def ok(self, kind: str, seconds: float) -> None:
        self.lat[self.minute()].append(seconds * 1000)
        self.kinds[kind] += 1

    def error(self, kind: str, what: str) -> None:
        self.errors[self.minute()] += 1
        self.kinds[f"{kind} errors"] += 1
        if len(self.first_errors) < 10:
            self.first_errors.append(f"{kind}: {what}"[:300])


def frames(text: str) -> list[tuple[int | None, dict]]:
    """(id, data) of each SSE frame in ``text``."""
    out = []
    for block in text.split("\n\n"):
        event_id, data = None, None
        for line in block.split("\n"):
            if line.startswith("id: "):
                event_id = int(line[4:])
            elif line.startswith("data: "):
                data = json.loads(line[6:])
        if data is not None:
            out.append((event_id, data))
    return out


class Worker:
    def __init__(self, client: httpx.AsyncClient, stats: Stats, seed: int) -> None:
        self.client = client
        self.stats = stats
        self.rng = random.Random(seed)
        self.conversation: str | None = None
        self.turns = 0

    def _body(self) -> dict:
        body = {"task": f"{TASK} ({self.turns})"}
        if self.conversation:
            body["conversationId"] = self.conversation
        return body

    def _turned(self, conversation: str) -> None:
        self.turns += 1
        self.conversation = None if self.turns % 20 == 0 else conversation

    async def send(self) -> None:
        resp = await self.client.post(f"{AGENT}/execute/sync", json=self._body())
        resp.raise_for_status()
        self._turned(resp.json()["conversationId"])

    async def stream(self) -> None:
        async with self.client.stream("POST", f"{AGENT}/execute/stream", json=self._body()) as r:
            r.raise_for_status()
            got = frames((await r.aread()).decode())
        if not got or not got[-1][1].get("done"):
            raise RuntimeError(f"no done: {got[-1:]}")
        self._turned(got[0][1]["conversationId"])

    async def reconnect(self) -> None:
        body, seen, last_id = self._body(), [], 0
        async with self.client.stream("POST", f"{AGENT}/execute/stream", json=body) as r:
            r.raise_for_status()
            buffer = ""
            async for piece in r.aiter_text():
                buffer += piece
                done_frames = frames(buffer.rsplit("\n\n", 1)[0]) if "\n\n" in buffer else []
                if any("chunk" in d for _, d in done_frames):
                    seen = done_frames
                    break
        start = seen[0][1]
        last_id = max(i for i, _ in seen if i is not None)
        url = f"/api/v1/runs/{start['runId']}/stream"
        headers = {"Last-Event-ID": str(last_id)}
        async with self.client.stream("GET", url, params={"format": "v1"}, headers=headers) as r:
            r.raise_for_status()
            rest = frames((await r.aread()).decode())
        if not rest or not rest[-1][1].get("done"):
            raise RuntimeError("reconnect: no done")
        text = "".join(d.get("chunk", "") for _, d in seen + rest)
        ids = [i for i, _ in seen + rest if i is not None]
        if ids != sorted(set(ids)):
            raise RuntimeError("reconnect: an event repeated or out of order")
        messages = await self.client.get(
            f"/api/v1/conversations/{start['conversationId']}/messages", params={"limit": 100}
        )
        stored = messages.json()["items"][-1]["content"]
        if stored != text:
            raise RuntimeError("reconnect: the text read differs from the stored answer")
        self._turned(start["conversationId"])

    async def list(self) -> None:
        resp = await self.client.get("/api/v1/conversations", params={"limit": 20})
        resp.raise_for_status()
        items = resp.json()["items"]
        if items:
            uuid = self.rng.choice(items)["uuid"]
            page = await self.client.get(
                f"/api/v1/conversations/{uuid}/messages", params={"limit": 40}
            )
            page.raise_for_status()

    async def loop(self, until: float) -> None:
        ops = [self.send, self.stream, self.reconnect, self.list]
        weights = [3, 3, 2, 2]
        while time.monotonic() < until:
            op = self.rng.choices(ops, weights)[0]
            kind = op.__name__
            t0 = time.perf_counter()
            try:
                await op()
                self.stats.ok(kind, time.perf_counter() - t0)
            except (httpx.HTTPError, RuntimeError, KeyError, ValueError, IndexError) as exc:
                detail = exc.response.text if isinstance(exc, httpx.HTTPStatusError) else ""
                self.stats.error(kind, f"{type(exc).__name__}: {exc} {detail}")
                self.conversation = None  # a run may still be going on it
            await asyncio.sleep(0.1)


# -- probes --------------------------------------------------------------------------------


def sqlite_fds(pgid: int, path: str) -> int:
    total = 0
    for pid in group_pids(pgid):
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    if str(fd.readlink()).startswith(path):
                        total += 1
    return total


def sql_connections(db_url: str, engine: sa.Engine | None, pgid: int) -> int:
    if engine is None:
        return sqlite_fds(pgid, sa.engine.make_url(db_url).database)
    with engine.connect() as conn:
        name = sa.engine.make_url(db_url).database
        query = "SELECT count(*) FROM pg_stat_activity WHERE datname = %(n)s"
        query += " AND pid <> pg_backend_pid()"
        return int(conn.exec_driver_sql(query, {"n": name}).scalar())


async def sample_forever(stats: Stats, pgid: int, admin, db_url: str, engine) -> None:
    while True:
        stats.samples.append(
            {
                "t": time.monotonic() - stats.t0,
                "rss_mb": group_rss_kb(pgid) / 1024,
                "fds": fds(pgid),
                "redis_mb": admin.info("memory")["used_memory"] / 1e6,
                "sql": sql_connections(db_url, engine, pgid),
                "wave": stats.in_wave,
            }
        )
        await asyncio.sleep(5)


def span(values: list[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}" if values else "-"


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope, per minute."""
    if len(points) < 2:
        return float("nan")
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    den = sum((t - mx) ** 2 for t, _ in points)
    return sum((t - mx) * (v - my) for t, v in points) / den * 60 if den else float("nan")


# -- run -----------------------------------------------------------------------------------


async def soak(args, server, db_url: str, admin) -> tuple[Stats, list[Wave]]:
    pgid = server.proc.pid
    engine = None
    if not db_url.startswith("sqlite"):
        engine = sa.create_engine(db_url, poolclass=sa.pool.NullPool)
    stats = Stats(t0=time.monotonic())
    until = stats.t0 + args.minutes * 60
    sampler = asyncio.create_task(sample_forever(stats, pgid, admin, db_url, engine))
    limits = httpx.Limits(max_connections=args.workers * 2, max_keepalive_connections=args.workers)
    headers = {"Authorization": f"Bearer {LOAD_KEY}"}
    waves: list[Wave] = []
    async with httpx.AsyncClient(
        base_url=server.url, timeout=60, limits=limits, headers=headers
    ) as client:
        workers = [Worker(client, stats, i) for i in range(args.workers)]
        load = [asyncio.create_task(w.loop(until)) for w in workers]
        next_wave = stats.t0 + args.wave_every / 2
        # a wave lasts ~60 s; the last one ends before the last tenth of the run
        last_wave_start = until - args.minutes * 6 - 60
        while time.monotonic() < until:
            if args.wave_every and next_wave <= time.monotonic() <= last_wave_start:
                note(f"slow-client wave at {time.monotonic() - stats.t0:.0f} s")
                stats.in_wave = True
                await wave_of_slow_clients(server.port, pgid, args, waves)
                stats.in_wave = False
                next_wave += args.wave_every
            await asyncio.sleep(1)
        await asyncio.gather(*load)
    sampler.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await sampler
    if engine is not None:
        engine.dispose()
    return stats, waves


def report(args, stats: Stats, waves: list[Wave]) -> Checks:
    print("\nPer minute (load latency over every operation, ms).\n")
    rows = []
    by_minute = defaultdict(list)
    for s in stats.samples:
        by_minute[int(s["t"] // 60)].append(s)
    for minute in sorted(set(stats.lat) | set(stats.errors)):
        lat = stats.lat.get(minute, [])
        last = by_minute.get(minute, [{}])[-1]
        rows.append(
            [
                minute + 1,
                len(lat),
                stats.errors.get(minute, 0),
                f"{percentile(lat, 50):.1f}",
                f"{percentile(lat, 99):.1f}",
                f"{last.get('rss_mb', float('nan')):.1f}",
                last.get("fds", "-"),
                f"{last.get('redis_mb', float('nan')):.2f}",
                last.get("sql", "-"),
            ]
        )
    heads = ["minute", "ops", "errors", "p50", "p99", "RSS MB", "fds", "Redis MB", "SQL conns"]
    print(table(heads, rows))
    print("\nOperations: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.kinds.items())))
    for line in stats.first_errors:
        print(f"  error: {line}")

    quiet = [s for s in stats.samples if not s["wave"]]
    warm = [s for s in quiet if s["t"] >= args.warmup]
    half = [s for s in quiet if s["t"] >= args.minutes * 30]
    print(
        f"\nSlopes per minute, least squares over the samples after {args.warmup:.0f} s "
        "outside slow-client waves (last half alone).\n"
    )
    rows = []
    slopes = {}
    for key, unit in (("rss_mb", "MB"), ("fds", "fds"), ("redis_mb", "MB"), ("sql", "conns")):
        s_warm = slope([(s["t"], s[key]) for s in warm])
        s_half = slope([(s["t"], s[key]) for s in half])
        slopes[key] = (s_warm, s_half)
        first, last = (warm[0][key], warm[-1][key]) if warm else (float("nan"),) * 2
        rows.append(
            [key, f"{s_warm:+.3f} {unit}/min", f"{s_half:+.3f}", f"{first:.1f} -> {last:.1f}"]
        )
    print(table(["what", "slope after warm-up", "last half", "first -> last"], rows))

    if waves:
        print("\nSlow-client waves (time until the server closed them, s).\n")
        rows = []
        for i, w in enumerate(waves, 1):
            hc, rc = w.header_closed_s, w.readers_closed_s
            headers = f"{len(hc)}/{args.slow} closed at {span(hc)} s, {w.header_open} open"
            bc = w.bodies_closed_s
            bodies = f"{len(bc)}/{args.slow_bodies} closed at {span(bc)} s"
            bodies += f", {w.bodies_held} held {args.body_hold:.0f} s"
            readers = f"{w.readers_started} open, {w.readers_refused} x 429; {len(rc)} closed"
            readers += f" by the server at {span(rc)} s, {w.readers_open} still open at "
            readers += f"{args.reader_hold:.0f} s"
            rows.append(
                [i, headers, bodies, readers, f"{w.fds_before} / {w.fds_peak} / {w.fds_after}"]
            )
        heads = ["wave", "slow headers", "slow bodies", "never-reading readers"]
        heads.append("fds before / peak / after")
        print(table(heads, rows))

    checks = Checks()
    errors = sum(stats.errors.values())
    checks.add(errors == 0, f"0 errors in the mixed load: {errors}")
    minutes = max(1e-9, (stats.samples[-1]["t"] - args.warmup) / 60) if warm else 0
    rss_growth = slopes["rss_mb"][0] * minutes
    checks.add(
        rss_growth < 10,
        f"RSS slope ~ 0 after warm-up (< 10 MB over the run): "
        f"{slopes['rss_mb'][0]:+.3f} MB/min, {rss_growth:+.1f} MB over {minutes:.1f} min",
    )
    fd_growth = slopes["fds"][0] * minutes
    checks.add(
        abs(fd_growth) < 5,
        f"fd slope ~ 0 after warm-up (< 5 fds over the run): {slopes['fds'][0]:+.3f}/min, "
        f"{fd_growth:+.1f} over {minutes:.1f} min",
    )
    for w in waves:
        checks.add(
            w.header_open == 0 and all(t < 15 for t in w.header_closed_s),
            f"slow headers closed by the 10 s header timeout: {len(w.header_closed_s)} closed, "
            f"max {max(w.header_closed_s, default=0):.1f} s",
        )
        checks.add(
            w.bodies_held == 0 and all(t < 15 for t in w.bodies_closed_s),
            f"slow bodies closed by the 10 s body read timeout: {len(w.bodies_closed_s)} "
            f"closed, max {max(w.bodies_closed_s, default=0):.1f} s",
        )
        checks.add(
            w.readers_open == 0,
            f"never-reading readers bounded: {w.readers_refused} refused (429), "
            f"{len(w.readers_closed_s)} closed by the server, {w.readers_open} still open after "
            f"{args.reader_hold:.0f} s",
        )
    return checks


def options(parser) -> None:
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--warmup", type=float, default=120.0, help="s left out of the slopes")
    parser.add_argument("--wave-every", type=float, default=150.0, help="s; 0: no slow clients")
    parser.add_argument("--slow", type=int, default=200, help="slow-header sockets per wave")
    parser.add_argument("--slow-bodies", type=int, default=50, help="slow-body requests per wave")
    parser.add_argument("--body-hold", type=float, default=30.0, help="s a slow body is held")
    parser.add_argument(
        "--reader-hold", type=float, default=60.0, help="s a never-reading reader is held"
    )
    parser.add_argument(
        "--readers", type=int, default=300, help="never-reading SSE readers per wave"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(
        __doc__,
        options,
        {
            "minutes": 1.5,
            "warmup": 20.0,
            "wave_every": 40.0,
            "slow": 30,
            "slow_bodies": 10,
            "readers": 40,
            "body_hold": 15.0,
            "reader_hold": 45.0,
        },
        argv,
    )
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    started = time.perf_counter()
    keys = [f"load:{LOAD_KEY}"] + [f"slow{i}:{slow_key(i)}" for i in range(SLOW_OWNERS)]
    with (
        tempfile.TemporaryDirectory(prefix="lumina-soak-") as tmp,
        redis_server(Path(tmp)) as redis_url,
        database(args.db, Path(tmp)) as db_url,
    ):
        env = {
            "LUMINA_REDIS_URL": redis_url,
            "LUMINA_DEMO_DELAY_MS": "5",
            "LUMINA_API_KEYS": ",".join(keys),
            # Every client here is loopback: the per-address cap would be one for them all.
            "LUMINA_MAX_REQUESTS_PER_ADDRESS": "0",
            # The load owner's many runs at once are the point; the stream cap still holds.
            "LUMINA_MAX_ACTIVE_RUNS_PER_OWNER": "100000",
        }
        admin = redis.Redis.from_url(redis_url)
        header(
            "soak.py",
            args,
            f"httpx {httpx.__version__}, redis-server {admin.info('server')['redis_version']}",
        )
        with app_server(Path(tmp) / "server", env=env, database_url=db_url) as server:
            stats, waves = asyncio.run(soak(args, server, db_url, admin))
            tail = server.tail(20)
        admin.close()
    checks = report(args, stats, waves)
    if "ERROR" in tail or "Traceback" in tail:
        print("\nServer log tail:\n" + tail)
    checks.print()
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
