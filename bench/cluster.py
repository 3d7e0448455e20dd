"""Throughput of one vs two app instances over one PostgreSQL and one Redis.

Each instance is a real ``reflex run --backend-only`` process (tests/server.py). Clients
send ``execute/sync`` turns (instant demo model) round-robin over the instances for a
fixed time; the anchor is the same load against one instance. On a 2-core machine the
client, the database, Redis and the instances all share the same two cores, so the gain
is bounded by CPU, not by Lumina: the figure is reported as measured.

    .venv/bin/python bench/cluster.py [--seconds 10] [--clients 16]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import machine_line, percentile, server_database, table  # noqa: E402
from tests.conftest import RedisServer  # noqa: E402
from tests.server import AppServer  # noqa: E402


async def load(urls: list[str], clients: int, seconds: float) -> tuple[int, list[float], int]:
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds

    async def client(index: int) -> None:
        nonlocal errors
        base = urls[index % len(urls)]
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            conv = (await http.post("/api/v1/conversations", json={"agentId": "assistant"})).json()
            while time.monotonic() < deadline:
                started = time.perf_counter()
                resp = await http.post(
                    "/api/v1/agents/assistant/execute/sync",
                    json={"task": f"turn from client {index}", "conversationId": conv["uuid"]},
                )
                latencies.append((time.perf_counter() - started) * 1000)
                errors += resp.status_code != 200

    await asyncio.gather(*(client(i) for i in range(clients)))
    return len(latencies), latencies, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    print(machine_line())
    rows = []
    work = Path(tempfile.mkdtemp(prefix="lumina-cluster-bench-"))
    url, drop = server_database("postgresql")
    redis = RedisServer(work)
    redis.start()
    env = {"LUMINA_REDIS_URL": redis.url, "LUMINA_DEMO_DELAY_MS": "0"}
    servers = [
        AppServer(work / f"i{n}", backend_only=True, env=env, database_url=url) for n in (1, 2)
    ]
    try:
        for server in servers:
            server.start()
        results = {}
        for count in (1, 2, 1):  # the single-instance anchor before and after
            turns, latencies, errors = asyncio.run(
                load([s.url for s in servers[:count]], args.clients, args.seconds)
            )
            rate = turns / args.seconds
            results.setdefault(count, []).append(rate)
            rows.append(
                [
                    f"{count} instance{'s' if count > 1 else ''}",
                    f"{rate:.0f}",
                    f"{percentile(latencies, 50):.1f}",
                    f"{percentile(latencies, 99):.1f}",
                    errors,
                ]
            )
        print(table(["setup", "turns/s", "p50 ms", "p99 ms", "errors"], rows))
        single = sum(results[1]) / len(results[1])
        print(f"2 instances / 1 instance: {results[2][0] / single:.2f}x")
    finally:
        for server in servers:
            server.stop()
        redis.kill()
        drop()


if __name__ == "__main__":
    main()
