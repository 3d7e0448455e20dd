"""Tools without a server: config.json's tool settings, the built-ins, argument checks,
and the runner (parallel calls, errors, timeouts, the 16 KB cap, cancellation)."""

from __future__ import annotations

import asyncio
import json
import logging
import re

import pytest

from lumina_app.agents.definitions.registry import AgentRegistry
from lumina_app.agents.definitions.tool_config import ToolConfigError, parse_tool_config
from lumina_app.agents.tools.builtin import builtin_tool
from lumina_app.agents.tools.calculator import evaluate
from lumina_app.agents.tools.runner import ToolRunner
from lumina_app.agents.tools.spec import (
    RESULT_MAX_BYTES,
    Tool,
    Toolbox,
    ToolContext,
    ToolError,
    ToolOutput,
    ToolSpec,
)
from lumina_app.domain import ToolCall
from tests.waits import wait_until

pytestmark = pytest.mark.unit

CONTEXT = ToolContext("agent", "conversation", "owner", "run-1")


# -- config.json ------------------------------------------------------------------------------


def test_claude_desktop_shaped_config_is_read() -> None:
    config = parse_tool_config(
        {
            "tools": ["current_time", "calculator"],
            "mcpServers": {
                "time": {
                    "command": "python",
                    "args": ["-m", "mcp_server_time"],
                    "env": {"TZ": "UTC"},
                    "cwd": "workspace",
                },
                "remote": {"url": "https://mcp.example/mcp", "headers": {"X-Key": "k"}},
                "off": {"command": "nothing", "disabled": True},
            },
            "maxToolSteps": 3,
            "toolTimeoutSeconds": 2.5,
        }
    )
    assert config.builtins == ("current_time", "calculator")
    assert [s.name for s in config.mcp_servers] == ["time", "remote"]
    time, remote = config.mcp_servers
    assert (time.command, time.args, time.env, time.cwd) == (
        "python",
        ("-m", "mcp_server_time"),
        (("TZ", "UTC"),),
        "workspace",
    )
    assert (remote.url, remote.headers, remote.source) == (
        "https://mcp.example/mcp",
        (("X-Key", "k"),),
        "mcp:remote",
    )
    assert (config.max_steps, config.timeout) == (3, 2.5)
    defaults = parse_tool_config({})
    assert (defaults.builtins, defaults.mcp_servers) == ((), ())
    assert (defaults.max_steps, defaults.timeout) == (8, 30.0)


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"tools": ["rm_rf"]}, "unknown built-in tool 'rm_rf'"),
        ({"tools": "current_time"}, "must be a list"),
        ({"tools": ["calculator", "calculator"]}, "twice"),
        ({"mcpServers": []}, "must be an object"),
        ({"mcpServers": {"x": "python"}}, "mcpServers.x must be an object"),
        ({"mcpServers": {"x": {}}}, "needs either 'command'"),
        ({"mcpServers": {"x": {"command": "a", "url": "http://b"}}}, "needs either"),
        ({"mcpServers": {"x": {"command": ""}}}, "non-empty string"),
        ({"mcpServers": {"x": {"command": "a", "args": "-v"}}}, "args must be a list"),
        ({"mcpServers": {"x": {"command": "a", "env": {"K": 1}}}}, "env must be an object"),
        ({"mcpServers": {"x": {"url": "ftp://x"}}}, "http:// or https://"),
        ({"mcpServers": {"x": {"url": "http://x", "type": "sse"}}}, "SSE transport"),
        ({"mcpServers": {"x": {"command": "a", "comand": "b"}}}, "unknown key 'comand'"),
        ({"mcpServers": {"../x": {"command": "a"}}}, "not a usable server name"),
        ({"maxToolSteps": 0}, "'maxToolSteps' must be a whole number from 1 to 100"),
        ({"maxToolSteps": 2.5}, "'maxToolSteps'"),
        ({"maxToolSteps": True}, "'maxToolSteps'"),
        ({"toolTimeoutSeconds": 0}, "'toolTimeoutSeconds' must be a number"),
        ({"toolTimeoutSeconds": float("nan")}, "'toolTimeoutSeconds'"),
        ({"toolTimeoutSeconds": "30"}, "'toolTimeoutSeconds'"),
    ],
)
def test_a_broken_tool_config_says_what_is_wrong(config: dict, reason: str) -> None:
    with pytest.raises(ToolConfigError, match=re.escape(reason)):
        parse_tool_config(config)


def test_a_broken_tool_config_makes_the_agent_unavailable_with_the_reason(tmp_path) -> None:
    folder = tmp_path / "agents" / "x"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"name": "X", "tools": ["nope"]}))
    agent = AgentRegistry(tmp_path / "agents", recheck_seconds=0).get("x")
    assert agent is not None and not agent.available
    assert agent.error == (
        "config.json: unknown built-in tool 'nope' (built-ins: calculator, current_time, recall)"
    )
    (folder / "config.json").write_text(json.dumps({"name": "X", "tools": ["calculator"]}))
    agent = AgentRegistry(tmp_path / "agents", recheck_seconds=0).get("x")
    assert agent.available and agent.tools.builtins == ("calculator",)
    assert agent.folder == folder and "tools" not in agent.extra


# -- built-ins --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1 + 2 * 3", 7),
        ("(2 + 3) * sqrt(16)", 20.0),
        ("2 ** 10", 1024),
        ("7 // 2 + 7 % 2", 4),
        ("round(pi, 3)", 3.142),
        ("max(1, -4, 3)", 3),
        ("-(-3)", 3),
    ],
)
def test_the_calculator_computes(expression: str, value: float) -> None:
    assert evaluate(expression) == value


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("__import__('os').system('id')", "unknown function"),
        ("().__class__", "unsupported syntax"),
        ("x", "unknown name 'x'"),
        ("'a' * 3", "unsupported value"),
        ("[1] * 10", "unsupported syntax: List"),
        ("9 ** 9 ** 9", "result too large"),
        ("2 ** 3321", "result too large"),
        ("round(1, -4*10**7)", "ndigits must be between -1000 and 1000"),
        ("round(1, -10**999)", "ndigits must be between -1000 and 1000"),
        ("round(1.5, 10**999)", "ndigits must be between -1000 and 1000"),
        ("round(2, 0.5)", "ndigits must be a whole number"),
        ("1 << 10**9", "unsupported operator <<"),
        ("2 >> 1", "unsupported operator >>"),
        ("~1", "unsupported operator ~"),
        ("1e999", "not a finite number"),
        ("1e308 * 10", "not a finite number"),
        ("2 ** -10**999", "math error"),
        ("sqrt(10**999)", "math error"),
        ("(" * 201 + "1" + ")" * 201, "not an arithmetic expression"),
        ("abs(" * 60 + "1" + ")" * 60, "nested too deeply"),
        ("1\x00", "not an arithmetic expression"),
        ("10 ** 600 * 10 ** 600", "result too large"),
        ("1 / 0", "division by zero"),
        ("(-8) ** 0.5", "not a real number"),
        ("2.0 ** 5000", "math error"),
        ("sqrt(-1)", "math error"),
        ("1 +", "not an arithmetic expression"),
        ("1" * 501, "too long"),
        ("+".join(["1"] * 150), "too complex"),
        ("lambda: 1", "unsupported syntax: Lambda"),
        ("max(x=1)", "positional arguments only"),
    ],
)
def test_the_calculator_refuses_anything_else(expression: str, reason: str) -> None:
    with pytest.raises(ToolError, match=re.escape(reason)):
        evaluate(expression)


def test_the_calculator_still_reaches_its_bounds() -> None:
    assert evaluate("round(123456, -1000)") == 0
    assert len(str(evaluate("2 ** 3320"))) == 1000  # the largest power of two
    assert evaluate("(-1) ** (10**999)") == 1
    assert evaluate("round(2.675, 1000)") == 2.675
    assert evaluate("abs(" * 40 + "-1" + ")" * 40) == 1


async def test_current_time_in_a_timezone_and_an_unknown_one() -> None:
    tool = builtin_tool("current_time")
    paris = await tool.invoke({"timezone": "Europe/Paris"}, CONTEXT)
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0[12]:00"
    assert re.fullmatch(stamp + r" \(\w+day, Europe/Paris\)", paris.text)
    utc = await tool.invoke({}, CONTEXT)
    assert utc.text.endswith(", UTC)") and "+00:00" in utc.text
    gmt = await tool.invoke({"timezone": "Etc/GMT+5"}, CONTEXT)
    assert "-05:00 (" in gmt.text
    with pytest.raises(ToolError, match="unknown time zone 'Mars/Olympus'"):
        await tool.invoke({"timezone": "Mars/Olympus"}, CONTEXT)


HOSTILE_ZONES = [
    "Europe",  # a folder of the tz database: IsADirectoryError, with its path
    "x" * 100_000,  # File name too long, with the path
    "Europe/" + "y" * 300,
    "zone.tab",  # a file of the database that is not a zone
    "../../../../etc/passwd",
    "/etc/localtime",
    "Europe/../UTC",
    "Europe//Paris",
    "UTC\x00",
    "Europe/Paris\n",
    " UTC",
]


@pytest.mark.parametrize("zone", HOSTILE_ZONES, ids=lambda z: repr(z[:20]))
async def test_a_bad_time_zone_is_a_clear_error_that_shows_no_path(zone: str, caplog) -> None:
    """``Europe`` and a 100k-character zone showed the user a path inside the virtualenv
    (and logged a traceback): the error names the zone, cut short, and nothing else."""
    results = await run(runner(builtin_tool("current_time")), call("current_time", zone))
    (result,) = results
    assert result.is_error and result.content.startswith("Error: unknown time zone ")
    assert result.content.endswith(": use an IANA name such as Europe/Paris or UTC")
    assert len(result.content) < 160
    assert "site-packages" not in result.content and "zoneinfo/" not in result.content
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING]


def call(name: str, timezone: str) -> ToolCall:
    return ToolCall(name, json.dumps({"timezone": timezone}), "z")


# -- the runner -------------------------------------------------------------------------------


def fake_tool(name: str, behaviour, schema: dict | None = None) -> Tool:
    async def invoke(args: dict, ctx: ToolContext) -> ToolOutput:
        return await behaviour(args, ctx)

    return Tool(ToolSpec(name, name, schema or {"type": "object"}), invoke)


def runner(*tools: Tool, timeout: float = 5.0) -> ToolRunner:
    return ToolRunner(Toolbox(tools={t.name: t for t in tools}), CONTEXT, timeout=timeout)


async def run(tool_runner: ToolRunner, *calls: ToolCall) -> list:
    results: dict = {}
    seen = []

    async def on_result(result) -> None:
        seen.append(result.call.call_id)

    await tool_runner.run(calls, results, on_result)
    assert sorted(seen) == sorted(results)
    return [results[c.call_id] for c in calls]


async def test_calls_run_at_once_and_results_arrive_as_each_ends() -> None:
    order = []

    async def sleeper(args, ctx):
        await asyncio.sleep(args["s"])
        order.append(args["s"])
        return ToolOutput(f"slept {args['s']} for {ctx.conversation_uuid}")

    tool = fake_tool("sleep", sleeper)
    started = asyncio.get_running_loop().time()
    slow, fast = await run(
        runner(tool), ToolCall("sleep", '{"s": 0.3}', "a"), ToolCall("sleep", '{"s": 0.1}', "b")
    )
    assert asyncio.get_running_loop().time() - started < 0.5  # not one after the other
    assert order == [0.1, 0.3]
    assert (slow.content, slow.is_error) == ("slept 0.3 for conversation", False)
    assert 250 <= slow.duration_ms < 500 and fast.duration_ms < 250


async def test_what_goes_wrong_is_a_result_for_the_model(caplog) -> None:
    async def boom(args, ctx):
        raise RuntimeError("kaput")

    async def hang(args, ctx):
        await asyncio.sleep(10)

    async def refuse(args, ctx):
        raise ToolError("no such city")

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tools = runner(
        fake_tool("boom", boom),
        fake_tool("hang", hang),
        fake_tool("refuse", refuse),
        fake_tool("typed", refuse, schema),
        timeout=0.2,
    )
    results = await run(
        tools,
        ToolCall("nope", "{}", "1"),
        ToolCall("typed", '{"n": "seven"}', "2"),
        ToolCall("typed", "{not json", "3"),
        ToolCall("typed", "[1]", "4"),
        ToolCall("boom", "{}", "5"),
        ToolCall("hang", "{}", "6"),
        ToolCall("refuse", "", "7"),
    )
    assert all(r.is_error for r in results)
    assert [r.content for r in results] == [
        "Error: there is no tool named 'nope' (tools: boom, hang, refuse, typed)",
        "Error: invalid arguments for typed: n: 'seven' is not of type 'integer'",
        "Error: the arguments are not valid JSON: Expecting property name enclosed in "
        "double quotes: line 1 column 2 (char 1)",
        "Error: the arguments must be a JSON object",
        "Error: boom crashed (RuntimeError)",  # what it said may name files: only logged
        "Error: hang did not answer within 0.2 s",
        "Error: no such city",
    ]
    crash = [r for r in caplog.records if r.getMessage() == "tool boom crashed"]
    assert len(crash) == 1 and crash[0].exc_info  # a crash is a bug: logged with its trace
    crash[0].expected_in_test = True


async def test_a_big_result_is_cut_to_16_kb_with_a_marker_and_made_storable() -> None:
    async def big(args, ctx):
        return ToolOutput("é" * 20_000 + "\x00")

    async def nul(args, ctx):
        return ToolOutput("a\x00b", is_error=True)

    cut, odd = await run(
        runner(fake_tool("big", big), fake_tool("nul", nul)),
        ToolCall("big", "{}", "1"),
        ToolCall("nul", "{}", "2"),
    )
    assert cut.truncated and not cut.is_error
    assert len(cut.content.encode()) <= RESULT_MAX_BYTES
    assert cut.content.startswith("é" * 8000)
    assert cut.content.endswith(
        "[… truncated by Lumina: the tool returned 40003 bytes, the first 16300 are kept]"
    )
    assert (odd.content, odd.is_error, odd.truncated) == ("a\ufffdb", True, False)


async def test_cancelling_the_step_cancels_the_calls_still_going() -> None:
    cancelled = []

    async def slow(args, ctx):
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def quick(args, ctx):
        return ToolOutput("done")

    results: dict = {}

    async def on_result(result) -> None:
        pass

    task = asyncio.create_task(
        runner(fake_tool("slow", slow), fake_tool("quick", quick)).run(
            [ToolCall("slow", "{}", "s"), ToolCall("quick", "{}", "q")], results, on_result
        )
    )
    await wait_until(lambda: "q" in results, "the quick tool's result")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == [True] and list(results) == ["q"]
