"""ACP agents: what one persistent agent process per conversation costs and saves.

For the test echo agent (tests/acp/echo_agent.py, Python + the SDK) and, when it is in the
test cache, codex-acp (npm; its model a local Responses-API stand-in): spawn-to-ready
(initialize + session/new) and spawn-to-first-token; a prompt over the pool's live process
(scenario B, through the acp provider) against the bare SDK ``session/prompt`` on the same
process (the anchor) and against a fresh process per prompt; RSS per live session (the
whole process group), and how many live sessions fit in this machine's memory.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import acp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._app import AcpConfig, AcpPool, AcpProvider
from bench._common import fmt_ms, header, note, parse_args, table
from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.domain import Scenario, TextDelta
from tests.acp.fake_responses import FakeResponses

ROOT = Path(__file__).resolve().parent.parent
CODEX = (
    Path(os.environ.get("LUMINA_TEST_CACHE", Path.home() / ".cache" / "lumina-tests"))
    / "codex-acp-0.16.0/node_modules/@zed-industries/codex-acp/bin/codex-acp.js"
)


def group_rss_mb(pgid: int) -> float:
    """Resident memory of every process in the group, in MB."""
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[2]) == pgid:
                total += int(stat[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e6


def mem_total_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024 / 1024
    return float("nan")


def agent_def(folder: Path, config: AcpConfig) -> AgentDefinition:
    return AgentDefinition(id="bench", name="bench", provider="acp", folder=folder, acp=config)


async def first_token(provider: AcpProvider, text: str) -> tuple[float, float]:
    """Seconds to the first answer chunk and to the end, through the provider."""
    began, first = time.perf_counter(), None
    async for item in provider.stream([{"role": "user", "content": text}]):
        if isinstance(item, TextDelta) and first is None:
            first = time.perf_counter() - began
    return first or float("nan"), time.perf_counter() - began


async def measure(label: str, config: AcpConfig, turns: int, fresh: int) -> list[list[str]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-acp-"))
    agent = agent_def(folder, config)
    pool = AcpPool(max_processes=64, start_timeout=60)
    rows = []
    try:
        # spawn-to-ready and spawn-to-first-token: a new conversation each time
        ready, to_token = [], []
        for i in range(fresh):
            provider = AcpProvider(pool, agent, f"fresh-{i}")
            began = time.perf_counter()
            await provider.prepare(Scenario.NEW)
            ready.append(time.perf_counter() - began)
            await first_token(provider, "hello")
            to_token.append(time.perf_counter() - began)
            pool.forget("bench", f"fresh-{i}")  # a fresh process per prompt: it goes
        # scenario B: one live process, many prompts, through the provider
        provider = AcpProvider(pool, agent, "live")
        await provider.prepare(Scenario.NEW)
        await first_token(provider, "warm up")
        session = pool.live("bench", "live")
        b_turns = []
        for i in range(turns):
            provider = AcpProvider(pool, agent, "live")
            await provider.prepare(Scenario.CONTINUE)
            began = time.perf_counter()
            await first_token(provider, f"turn {i}")
            b_turns.append(time.perf_counter() - began)
        # the anchor: the bare SDK on the same process, no provider, no pool
        bare = []
        proc = session.process
        proc.client.sink = asyncio.Queue()
        for i in range(turns):
            began = time.perf_counter()
            await proc.conn.prompt(session_id=proc.session_id, prompt=[acp.text_block(f"bare {i}")])
            bare.append(time.perf_counter() - began)
        proc.client.sink = None
        rss = group_rss_mb(proc.pid)
        med = statistics.median
        rows.append(
            [
                label,
                "spawn → ready (initialize + session/new)",
                fmt_ms(med(ready) * 1e3),
                f"n={fresh}",
            ]
        )
        rows.append(
            [
                label,
                "spawn → first token (fresh process per prompt)",
                fmt_ms(med(to_token) * 1e3),
                f"n={fresh}",
            ]
        )
        rows.append(
            [
                label,
                "B turn over the pool (live process, via the provider)",
                fmt_ms(med(b_turns) * 1e3),
                f"n={turns}",
            ]
        )
        rows.append(
            [
                label,
                "anchor: bare SDK session/prompt, same process",
                fmt_ms(med(bare) * 1e3),
                f"n={turns}",
            ]
        )
        rows.append(
            [label, "B overhead over the bare SDK", fmt_ms((med(b_turns) - med(bare)) * 1e3), ""]
        )
        rows.append(
            [
                label,
                "fresh process per prompt ÷ pooled B turn",
                f"{med(to_token) / med(b_turns):.1f}x",
                "",
            ]
        )
        fit = mem_total_gib() * 1024 / rss if rss else float("nan")
        rows.append(
            [
                label,
                "RSS per live session (process group)",
                f"{rss:.1f} MB",
                f"~{fit:,.0f} fit in {mem_total_gib():.0f} GiB",
            ]
        )
    finally:
        await pool.close()
        shutil.rmtree(folder, ignore_errors=True)
    return rows


async def main() -> None:
    args = parse_args(
        __doc__,
        lambda p: (
            p.add_argument("--turns", type=int, default=30),
            p.add_argument("--fresh", type=int, default=10),
        ),
        {"turns": 5, "fresh": 2},
    )
    header("acp_agents.py", args, f"agent-client-protocol {acp.PROTOCOL_VERSION=}")
    echo = AcpConfig(
        command=sys.executable,
        args=(str(ROOT / "tests/acp/echo_agent.py"),),
        env=(("PYTHONPATH", str(ROOT)),),
        permissions="deny",
    )
    note("echo agent")
    rows = await measure("echo (Python SDK)", echo, args.turns, args.fresh)
    if CODEX.is_file():
        with FakeResponses() as model:
            home = Path(tempfile.mkdtemp(prefix="bench-codex-home-"))
            (home / "config.toml").write_text(
                'model = "stand-in"\nmodel_provider = "standin"\n[model_providers.standin]\n'
                f'name = "stand-in"\nbase_url = "{model.base_url}"\nwire_api = "responses"\n'
                'env_key = "STANDIN_KEY"\n'
            )
            codex = AcpConfig(
                command=shutil.which("node") or "node",
                args=(str(CODEX),),
                env=(("CODEX_HOME", str(home)), ("STANDIN_KEY", "x")),
                permissions="deny",
            )
            note("codex-acp")
            rows += await measure("codex-acp 0.16", codex, args.turns, args.fresh)
            shutil.rmtree(home, ignore_errors=True)
    else:
        note(f"codex-acp not in the test cache ({CODEX}): run tests/acp/test_codex_acp.py once")
    print()
    print(table(["agent", "what", "median ms", "note"], rows))
    print(
        "\nCPU: an idle agent process uses none (it waits on stdin); a turn costs what the "
        "agent does, so on 2 cores the limit is prompts in flight, not live sessions."
    )


if __name__ == "__main__":
    asyncio.run(main())
