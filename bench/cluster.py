"""Cluster benchmark: throughput of one vs two app instances over one PostgreSQL and one Redis.

    python bench/cluster.py [--seconds 10] [--clients 16] [--quick]

Each instance is a real ``reflex run --backend-only`` process (the tests' AppServer) on a
throw-away PostgreSQL database and a private redis-server. Clients send ``execute/sync``
turns (instant demo model) round-robin over the instances for a fixed time; the anchor is
the same load on one instance, measured before and after. On a 2-core machine the client,
the database, Redis and the instances share the same cores, so the gain is bounded by CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _common import Checks, fmt_ms, header, parse_args, percentile, table
from _servers import app_server, database, redis_server


async def load(urls: list[str], clients: int, seconds: float) -> tuple[list[float], int]:
    """Turns for ``seconds``, one conversation per client; (latencies ms, errors)."""
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds

    async def client(index: int) -> None:
        nonlocal errors
        async with httpx.AsyncClient(base_url=urls[index % len(urls)], timeout=30) as http:
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
    return latencies, errors


def options(parser) -> None:
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=16)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, options, {"seconds": 2, "clients": 4}, argv)
    header("cluster.py", args, f"httpx {httpx.__version__}; PostgreSQL + Redis, demo model")
    rows, rates, errors = [], {1: [], 2: []}, 0
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lumina-cluster-")))
        url = stack.enter_context(database("postgresql", work))
        env = {"LUMINA_REDIS_URL": stack.enter_context(redis_server(work))}
        env["LUMINA_DEMO_DELAY_MS"] = "0"
        env["LUMINA_MAX_ACTIVE_RUNS_PER_OWNER"] = str(max(16, args.clients))
        servers = [
            stack.enter_context(app_server(work / f"i{n}", env=env, database_url=url))
            for n in (1, 2)
        ]
        for count in (1, 2, 1):  # the single-instance anchor before and after
            latencies, failed = asyncio.run(
                load([s.url for s in servers[:count]], args.clients, args.seconds)
            )
            errors += failed
            rates[count].append(len(latencies) / args.seconds)
            rows.append(
                [
                    f"{count} instance{'s' if count > 1 else ''}",
                    f"{rates[count][-1]:.0f}",
                    fmt_ms(percentile(latencies, 50)),
                    fmt_ms(percentile(latencies, 99)),
                    failed,
                ]
            )
    print()
    print(table(["setup", "turns/s", "p50 ms", "p99 ms", "errors"], rows))
    gain = rates[2][0] / (sum(rates[1]) / len(rates[1]))
    checks = Checks()
    checks.add(gain >= 1.0, f"2 instances >= 1 instance (the mean of both runs): {gain:.2f}x")
    checks.add(errors == 0, f"no errors: {errors}")
    checks.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
