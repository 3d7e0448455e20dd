"""Tools benchmark: what one tool call costs, and what a whole tool turn costs.

    python bench/tools.py [--calls N] [--turns N] [--quick]

(a) One call of mcp-server-time's ``get_current_time`` (timezone UTC), p50 / p99, the same
    work reached five ways, each adding a layer:
    * *direct*: ``TimeServer().get_current_time("UTC")`` and its JSON, in process — the
      anchor: the Python function the server runs;
    * *MCP in process*: the SDK's ``Client`` on the server object (the protocol, no pipe);
    * *MCP stdio, SDK*: the SDK's ``Client`` on ``python -m mcp_server_time`` (a process,
      JSON-RPC over its pipes);
    * *MCP stdio, Lumina*: the same server as a run reaches it — ``McpServer`` behind
      ``ToolRunner`` (schema check of the arguments, timeout, 16 KB cap);
    * *built-in, Lumina*: Lumina's own ``current_time`` through the same runner.
    Calls one after another, ``--calls`` timed after a warm-up.
(b) A whole turn, from the call to its last event (``execute_stream``, a new conversation
    each, the demo model at ``demo_delay_ms=0``, SQLite, everything in process): a turn
    without tools (the anchor), a turn calling the built-in ``current_time`` and one
    calling the MCP server's ``get_current_time`` (already started). A tool turn makes two
    provider calls and one more SQL transaction (the step: the answer that asked, its
    TOOL rows, the next answer row). The demo's answers differ in length (a few words), so
    the *tool step* column times what the tool adds inside the turn: from the
    ``tool_call`` event to the first text after the result (the call, the step's commit,
    the model called again).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import tempfile
import time
from functools import partial
from importlib.metadata import version
from pathlib import Path

import mcp
import sqlalchemy as sa
from _common import (
    Checks,
    Loop,
    Samples,
    fmt_ms,
    fmt_ratio,
    fmt_us,
    header,
    note,
    parse_args,
    table,
    time_async,
)
from _servers import database, database_version
from mcp.client.stdio import StdioServerParameters
from mcp_server_time.server import TimeServer, create_server

from bench import _app

ARGS = {"timezone": "UTC"}
TIME_SERVER = {
    "command": sys.executable,
    "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
}
CONTEXT = _app.ToolContext("bench", "conversation", "", "run-bench")
MCP_OVERHEAD_P50_MS = 5.0  # one stdio call through Lumina, above the direct call
TOOL_TURN_P50_MS = 25.0  # a whole turn with one tool call, in process


# -- (a) one call ----------------------------------------------------------------------------


def direct() -> str:
    return TimeServer().get_current_time("UTC").model_dump_json()


async def one_call_rows(calls: int, warmup: int) -> list[tuple[str, Samples]]:
    loop = Loop(n=calls, warmup=warmup, budget_s=60)
    rows: list[tuple[str, Samples]] = []

    async def direct_async() -> None:
        direct()

    rows.append(("direct (the anchor)", await time_async(direct_async, loop)))
    async with mcp.Client(create_server("UTC")) as client:
        rows.append(("MCP in process, SDK", await time_async(_sdk_call(client), loop)))
    params = StdioServerParameters(command=TIME_SERVER["command"], args=TIME_SERVER["args"])
    async with mcp.Client(params) as client:
        rows.append(("MCP stdio, SDK", await time_async(_sdk_call(client), loop)))
    config = _app.McpServerConfig(
        "time", command=TIME_SERVER["command"], args=tuple(TIME_SERVER["args"])
    )
    folder = Path(tempfile.gettempdir())
    server = _app.McpServer(config, folder=folder, start_timeout=30, retry_seconds=0)
    try:
        specs = await server.ensure()  # as the catalog makes them:
        tools = {s.name: _app.Tool(s, partial(server.call, s.name)) for s in specs}
        op = _runner_call(_app.Toolbox(tools=tools), "get_current_time")
        rows.append(("MCP stdio, Lumina", await time_async(op, loop)))
    finally:
        await server.close()
    builtin = _app.builtin_tool("current_time")
    toolbox = _app.Toolbox(tools={builtin.name: builtin})
    rows.append(("built-in, Lumina", await time_async(_runner_call(toolbox, "current_time"), loop)))
    return rows


def _sdk_call(client: mcp.Client):
    async def op() -> None:
        result = await client.call_tool("get_current_time", ARGS)
        assert not result.is_error

    return op


def _runner_call(toolbox, name: str):
    runner = _app.ToolRunner(toolbox, CONTEXT, timeout=30)
    call = _app.ToolCall(name, json.dumps(ARGS), "call_1")

    async def op() -> None:
        result = await runner.call(call)
        assert not result.is_error, result.content

    return op


def report_calls(rows: list[tuple[str, Samples]], checks: Checks) -> None:
    anchor = rows[0][1]
    print(f"\n(a) One get_current_time call, one after another ({anchor.n} timed):\n")
    print(
        table(
            ["way", "p50 µs", "p99 µs", "p50 over direct µs", "p50 / direct"],
            [
                [
                    label,
                    fmt_us(s.p50),
                    fmt_us(s.p99),
                    fmt_us(s.p50 - anchor.p50),
                    fmt_ratio(s.p50 / anchor.p50),
                ]
                for label, s in rows
            ],
        )
    )
    lumina = dict(rows)["MCP stdio, Lumina"]
    sdk = dict(rows)["MCP stdio, SDK"]
    print(
        f"\nLumina (schema check, timeout, 16 KB cap, result text) minus the bare SDK, p50: "
        f"{fmt_us(lumina.p50 - sdk.p50)} µs (two servers, two processes: within the noise)."
    )
    overhead = (lumina.p50 - anchor.p50) / 1000
    checks.add(
        overhead <= MCP_OVERHEAD_P50_MS,
        f"one MCP stdio call through Lumina costs ≤ {MCP_OVERHEAD_P50_MS} ms p50 over the "
        f"direct call: {fmt_ms(overhead)} ms",
    )


# -- (b) a whole turn --------------------------------------------------------------------------

TURNS = [
    ("no tool (the anchor)", "bench", "Tell me something."),
    ("built-in current_time", "clock", "What time is it?"),
    ("MCP get_current_time", "mcp", '/tool get_current_time {"timezone": "UTC"}'),
]


async def turn_rows(app: _app.App, turns: int, warmup: int) -> list[tuple]:
    rows = []
    for label, agent, message in TURNS:
        samples, steps, tool_calls = Samples(), Samples(), 0
        for i in range(warmup + turns):
            t0 = time.perf_counter_ns()
            called = answered = None
            async for event in app.stream(message, None, agent):
                kind = event.type.value
                if kind == "tool_call" and called is None:
                    called = time.perf_counter_ns()
                elif kind == "agent_output" and called is not None and answered is None:
                    answered = time.perf_counter_ns()
                last = event
            elapsed = time.perf_counter_ns() - t0
            result = last.data
            assert result["status"] == "complete", result
            if i >= warmup:
                samples.ns.append(elapsed)
                if called is not None and answered is not None:
                    steps.ns.append(answered - called)
                tool_calls += await app.tool_calls(result["conversationId"])
            await app.drop_runs([result["runId"]])
        rows.append((label, samples, steps, tool_calls))
        note(f"{label}: done")
    return rows


def report_turns(rows: list[tuple], checks: Checks) -> None:
    anchor = rows[0][1]
    print(f"\n(b) A whole turn, call to last event, a new conversation each ({anchor.n} timed):\n")
    print(
        table(
            [
                "turn",
                "p50 ms",
                "p99 ms",
                "p50 over no tool ms",
                "tool step p50 / p99 ms",
                "tool calls stored / turn",
            ],
            [
                [
                    label,
                    fmt_ms(s.ms(50)),
                    fmt_ms(s.ms(99)),
                    fmt_ms(s.ms(50) - anchor.ms(50)),
                    f"{fmt_ms(step.ms(50))} / {fmt_ms(step.ms(99))}" if step.n else "-",
                    f"{calls / max(s.n, 1):g}",
                ]
                for label, s, step, calls in rows
            ],
        )
    )
    mcp_turn = rows[2][1]
    checks.add(
        mcp_turn.ms(50) <= TOOL_TURN_P50_MS,
        f"a whole turn with one MCP tool call ≤ {TOOL_TURN_P50_MS:g} ms p50 in process: "
        f"{fmt_ms(mcp_turn.ms(50))} ms",
    )


# -- main ----------------------------------------------------------------------------------------


def options(parser) -> None:
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per way")
    parser.add_argument("--turns", type=int, default=200, help="timed turns per kind")
    parser.add_argument("--warmup", type=int, default=50, help="untimed first")


async def run(args, tmp: Path, sync_url: str) -> Checks:
    checks = Checks()
    report_calls(await one_call_rows(args.calls, args.warmup), checks)
    agents = {
        "clock": {"name": "Clock", "tools": ["current_time"]},
        "mcp": {"name": "MCP", "mcpServers": {"time": TIME_SERVER}},
    }
    app = await _app.App.open(sync_url, tmp / "data", None, agents)
    try:
        print(f"\n{app.describe()}")
        report_turns(await turn_rows(app, args.turns, min(args.warmup, 20)), checks)
    finally:
        await app.close()
    return checks


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, options, {"calls": 100, "turns": 20, "warmup": 5}, argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lumina-bench-")))
        sync_url = stack.enter_context(database("sqlite", tmp))
        versions = (
            f"mcp {version('mcp')}, mcp-server-time {version('mcp-server-time')}, "
            f"SQLAlchemy {sa.__version__}, {database_version(sync_url)} (temp file, WAL)"
        )
        header("tools.py", args, versions)
        checks = asyncio.run(run(args, tmp, sync_url))
    checks.print()
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
