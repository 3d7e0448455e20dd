"""Memories at scale (#43): one owner with many memories and concurrent cold turns of that
owner, while another owner's ``GET /healthz`` is timed.

    python bench/memories_scale.py [--memories 20000] [--turns 4] [--quick]

In-process, as one worker runs: the app over httpx's ASGI transport on one event loop, a
throw-away SQLite database migrated to head, the shipped ``assistant`` (demo model,
long-term memory of scope ``agent``), the local embedder. The memories are inserted in SQL
directly, each with a 256-dim float16 vector under the local model's name (what a memory
added through the API stores), so the index build reads and decodes them as in production.
After one turn of a third owner (everything warm but alice's index), ``--turns`` cold
turns of that owner at once (a new conversation each, her index not built yet) while bob
asks ``/healthz`` every 10 ms. Reported: bob's ``/healthz``
before (anchor) and during the turns, the turns' wall time, how many times the owner's
memories were read whole (an index build each), RSS before and after, and the peak RSS
during the turns (VmHWM, reset just before them).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import shutil
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import sqlalchemy as sa
from _common import ROOT, header, note, parse_args, percentile

from lumina_app.api import create_api
from lumina_app.composition import install, open_services
from lumina_app.domain import utcnow
from lumina_app.recall.embedders import LocalEmbedder
from lumina_app.settings import load_settings
from lumina_app.storage.sql import memories as rows
from lumina_app.storage.sql.models import memories as T
from lumina_app.storage.sql.schema_state import alembic_config

KEYS = "alice:ka,bob:kb,carol:kc"
ALICE, BOB = {"Authorization": "Bearer ka"}, {"Authorization": "Bearer kb"}
TOPICS = ["graph databases", "sourdough", "cycling", "Rust", "jazz piano", "tax returns",
          "orchids", "chess openings", "Lisbon", "kayaks", "compilers", "birdwatching"]  # fmt: skip


def _options(parser) -> None:
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--turns", type=int, default=4)


def _status(field: str) -> float:
    """A ``/proc/self/status`` figure in MB (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM back to the current RSS


async def _fill(db, count: int) -> None:
    now, dim = utcnow(), LocalEmbedder.dimension
    rng = np.random.default_rng(7)
    for start in range(0, count, 2000):
        batch = []
        for i in range(start, min(count, start + 2000)):
            vector = rng.standard_normal(dim).astype(np.float32)
            vector /= np.linalg.norm(vector)
            topic = TOPICS[i % len(TOPICS)]
            batch.append({
                "owner": "alice", "agent_id": "assistant", "status": "active", "pinned": False,
                "text": f"The user mentioned {topic} (note {i}) while talking about week {i // 7}.",
                "model": LocalEmbedder.name,
                "vector": base64.b64encode(vector.astype(np.float16).tobytes()).decode(),
                "created_at": now, "updated_at": now, "valid_from": now,
            })  # fmt: skip
        async with db.begin() as conn:
            await conn.execute(sa.insert(T), batch)


async def _healthz(api: httpx.AsyncClient, until: asyncio.Event | None, n: int = 0) -> list[float]:
    """bob's /healthz latencies (ms): ``n`` of them, or until ``until`` is set."""
    out: list[float] = []
    while (until is not None and not until.is_set()) or len(out) < n:
        t0 = time.perf_counter()
        resp = await api.get("/healthz", headers=BOB)
        out.append((time.perf_counter() - t0) * 1000)
        assert resp.status_code == 200, resp.text
        await asyncio.sleep(0.01)
    return out


async def _turn(api: httpx.AsyncClient, i: int, headers: dict = ALICE) -> dict:
    resp = await api.post(
        "/api/v1/agents/assistant/execute/sync",
        json={"task": f"Which city did I mention in week {i}?"},
        headers=headers,
        timeout=600,
    )
    assert resp.status_code == 200, resp.text
    return resp.json()


def _line(label: str, values: list[float]) -> None:
    p50, p99 = percentile(values, 50), percentile(values, 99)
    print(f"  {label:<34} n={len(values):<4} p50 {p50:8.1f} ms   p99 {p99:8.1f} ms   "
          f"max {max(values):8.1f} ms")  # fmt: skip


async def main(args) -> None:
    from alembic import command

    tmp = Path(tempfile.mkdtemp(prefix="lumina-bench-memscale-"))
    url = f"sqlite:///{tmp / 'bench.db'}"
    command.upgrade(alembic_config(url), "head")
    shutil.copytree(ROOT / "data/agents/assistant", tmp / "agents/assistant")
    settings = load_settings(database_url=url, data_dir=tmp, api_keys=KEYS, demo_delay_ms=0,
                             allowed_hosts="testserver")  # fmt: skip
    services = await open_services(settings)
    install(services)
    reads: list[str] = []
    read_whole = rows.with_vectors

    async def counted(*a, **kw):
        reads.append(kw.get("owner", "?"))
        return await read_whole(*a, **kw)

    rows.with_vectors = counted
    api = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_api(settings)),
                            base_url="http://testserver", timeout=60)  # fmt: skip
    try:
        t0 = time.perf_counter()
        await _fill(services.memories.store.db, args.memories)
        note(f"{args.memories} memories of alice inserted in {time.perf_counter() - t0:.1f} s")
        await api.get("/healthz", headers=BOB)  # warm the route
        # carol's turn first: the embedder, the agent and the routes warm, so what follows
        # costs alice's memories alone
        await _turn(api, 0, {"Authorization": "Bearer kc"})
        anchor = await _healthz(api, None, 100)
        rss_before = _status("VmRSS")
        _reset_peak()
        done = asyncio.Event()
        probe = asyncio.create_task(_healthz(api, done))
        t0 = time.perf_counter()
        turns = await asyncio.gather(*(_turn(api, i) for i in range(args.turns)))
        wall = time.perf_counter() - t0
        done.set()
        during = await probe
        peak, rss_after = _status("VmHWM"), _status("VmRSS")
        assert all(t["status"] == "complete" for t in turns), turns
        whole = reads.count("alice")
        print(f"{args.turns} concurrent cold turns of alice ({args.memories} memories): "
              f"{wall:.2f} s wall; her memories read whole {whole} time(s)")  # fmt: skip
        _line("bob /healthz, quiet (anchor)", anchor)
        _line("bob /healthz, during the turns", during)
        print(f"  RSS {rss_before:.0f} MB before, peak {peak:.0f} MB during, "
              f"{rss_after:.0f} MB after")  # fmt: skip
    finally:
        rows.with_vectors = read_whole
        await api.aclose()
        install(None)
        await services.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    logging.getLogger("httpx").setLevel(logging.WARNING)
    ARGS = parse_args(__doc__, _options, {"memories": 2000, "turns": 2})
    header("memories_scale.py", ARGS, f"numpy {np.__version__}")
    asyncio.run(main(ARGS))
