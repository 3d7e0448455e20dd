"""MCP servers as tool sources, for real: mcp-server-time from PyPI over stdio, and a
faulty server built with the SDK (tests/mcp_servers/faulty.py) for what goes wrong —
timeouts, crashes, huge output, bad schemas and arguments, a server that cannot start,
a stop during a call — and for what a server may see (its environment)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from pathlib import Path

import pytest

from lumina_app.domain import LOCAL, EventType, MessageStatus, MsgRole, RunEvent
from tests.conftest import ROOT, free_port, write_agent
from tests.fake_llm import Call, Reply
from tests.waits import wait_until

pytestmark = pytest.mark.slow

TIME_SERVER = {
    "command": sys.executable,
    "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
}


@pytest.fixture
def mcp_agent(data_dir, fake_llm, tmp_path):
    """Write an agent (answered by the fake LLM) with the given MCP servers; ``faulty``
    is the test server, which leaves traces in ``tmp_path / "faulty"``."""
    trace = tmp_path / "faulty"
    trace.mkdir()

    faulty = {
        "command": sys.executable,
        "args": ["-m", "tests.mcp_servers.faulty"],
        "env": {"FAULTY_DIR": str(trace), "PYTHONPATH": str(ROOT)},
    }

    def make(agent_id: str = "mcp", servers: dict | None = None, **extra) -> str:
        config = {
            "name": agent_id,
            "provider": "openai",
            "base_url": fake_llm.base_url,
            "model": "fake-1",
            "mcpServers": servers if servers is not None else {"faulty": faulty},
            **extra,
        }
        write_agent(data_dir / "agents", agent_id, config)
        return agent_id

    make.trace, make.faulty = trace, faulty
    return make


async def send(services, agent: str, text: str, conversation: str | None = None):
    stream = services.runs.stream(
        LOCAL, agent_id=agent, message=text, conversation_uuid=conversation
    )
    return [event async for event in stream]


def results(events: list[RunEvent]) -> list[dict]:
    return [e.data for e in events if e.type is EventType.TOOL_RESULT]


async def info(services, agent: str) -> dict[str, dict]:
    return {f"{t.source}/{t.name}": t for t in (await services.agents.info(agent)).tools}


async def test_mcp_server_time_from_pypi_over_stdio(services, fake_llm, mcp_agent) -> None:
    agent = mcp_agent("timely", {"time": TIME_SERVER}, tools=["calculator"])
    tools = await info(services, agent)
    assert set(tools) == {
        "builtin/calculator",
        "mcp:time/get_current_time",
        "mcp:time/convert_time",
    }
    assert all(t.available for t in tools.values())
    assert "timezone" in tools["mcp:time/get_current_time"].description.lower()
    fake_llm.script.replies = [
        Reply(calls=[Call("t1", "get_current_time", '{"timezone": "Europe/Paris"}')])
    ]
    events = await send(services, agent, "time in Paris?")
    offered = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert offered == {"calculator", "get_current_time", "convert_time"}
    (result,) = results(events)
    assert not result["isError"]
    assert json.loads(result["content"])["timezone"] == "Europe/Paris"
    assert fake_llm.requests[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "t1",
        "content": result["content"],
    }
    assert events[-1].data["status"] == "complete"
    (server,) = services.tools.servers(agent)
    assert server.starts == 1  # started once, shared by the info and the run


async def test_faults_are_results_for_the_model_and_the_server_survives(
    services, fake_llm, mcp_agent
) -> None:
    agent = mcp_agent(toolTimeoutSeconds=1)
    tools = await info(services, agent)
    assert not tools["mcp:faulty/broken_schema"].available
    assert "input schema is invalid" in tools["mcp:faulty/broken_schema"].reason
    assert not tools["mcp:faulty/bad name!"].available
    assert tools["mcp:faulty/echo"].available
    fake_llm.script.replies = [
        Reply(
            calls=[
                Call("slow", "slow", '{"seconds": 30}'),
                Call("huge", "huge", '{"kilobytes": 40}'),
                Call("fail", "fail", '{"message": "no such thing"}'),
                Call("args", "echo", '{"text": 5}'),
                Call("refused", "broken_schema", '{"x": "y"}'),
            ]
        )
    ]
    started = time.monotonic()
    events = await send(services, agent, "break things")
    assert time.monotonic() - started < 10  # the slow call was cut at its timeout
    offered = {t["function"]["name"] for t in fake_llm.requests[0]["tools"]}
    assert "broken_schema" not in offered and "bad name!" not in offered and "echo" in offered
    by_id = {r["callId"]: r for r in results(events)}
    assert by_id["slow"]["content"] == "Error: slow did not answer within 1 s"
    assert by_id["fail"]["isError"] and "no such thing" in by_id["fail"]["content"]
    assert (
        by_id["args"]["content"]
        == "Error: invalid arguments for echo: text: 5 is not of type 'string'"
    )
    assert by_id["refused"]["content"].startswith("Error: there is no tool named 'broken_schema'")
    huge = by_id["huge"]
    assert not huge["isError"] and len(huge["content"].encode()) <= 2048
    _conv, rows = await stored_rows(services, events)
    stored = {m.tool_call_id: m for m in rows if m.role is MsgRole.TOOL}
    assert len(stored["huge"].content.encode()) <= 16 * 1024 and stored["huge"].meta["truncated"]
    assert stored["huge"].content.endswith(
        "[… truncated by Lumina: the tool returned 40960 bytes, the first 16301 are kept]"
    )
    assert fake_llm.requests[1]["messages"][-4]["content"] == stored["huge"].content
    cancelled = mcp_agent.trace / "cancelled"
    await wait_until(cancelled.exists, "the server to hear the cancel", within=10)
    assert events[-1].data["status"] == "complete"


async def stored_rows(services, events):
    conv = await services.reads.lookup.get_conversation(events[0].data["conversationId"])
    return conv, await services.reads.conversations.history(conv, limit=200)


async def test_a_server_that_dies_is_restarted_for_the_next_call(
    services, fake_llm, mcp_agent
) -> None:
    agent = mcp_agent()
    fake_llm.script.replies = [
        Reply(calls=[Call("c1", "crash")]),
        Reply(calls=[Call("c2", "echo", '{"text": "still here"}')]),
    ]
    events = await send(services, agent, "crash, then echo")
    crashed, echoed = results(events)
    assert crashed["isError"] and "stopped during the call" in crashed["content"]
    assert (echoed["isError"], echoed["content"]) == (False, "still here")
    assert (mcp_agent.trace / "starts").read_text().count("x") == 2
    assert events[-1].data["status"] == "complete"


async def test_stop_during_a_slow_call_cancels_it_and_keeps_the_rows_consistent(
    services, fake_llm, mcp_agent
) -> None:
    agent = mcp_agent()
    fake_llm.script.replies = [
        Reply(
            chunks=["Working on it."],
            calls=[
                Call("quick", "echo", '{"text": "done"}'),
                Call("slow", "slow", '{"seconds": 60}'),
            ],
        )
    ]
    run = await services.chat.start_run(agent_id=agent, message="take your time")
    seen = []
    async for event in services.chat.follow(run):
        seen.append(event)
        if event.type is EventType.TOOL_RESULT:  # the quick one is back; the slow one runs
            await services.chat.stop(run.run_id)
    assert seen[-1].type is EventType.RESULT and seen[-1].data["status"] == "stopped"
    cancelled = mcp_agent.trace / "cancelled"
    await wait_until(cancelled.exists, "the server to hear the cancel", within=10)
    by_id = {r["callId"]: r for r in results(seen)}
    assert by_id["quick"]["content"] == "done"
    assert by_id["slow"] == {
        "callId": "slow",
        "name": "slow",
        "content": "Error: stopped by the user",
        "isError": True,
        "durationMs": by_id["slow"]["durationMs"],
    }
    conv, rows = await stored_rows(services, seen)
    assert [(m.role.value, m.status.value) for m in rows] == [
        ("USER", "complete"),
        ("ASSISTANT", "stopped"),
        ("TOOL", "complete"),
        ("TOOL", "complete"),
    ]
    asked = rows[1]
    assert asked.content == "Working on it." and asked.id == seen[-1].data["messageId"]
    assert [c["id"] for c in asked.meta["toolCalls"]] == ["quick", "slow"]
    assert [m.tool_call_id for m in rows[2:]] == ["quick", "slow"]
    assert (conv.tool_call_count, conv.last_seq, conv.message_count) == (2, 4, 4)
    assert (await services.chat.runs.get_run(run.run_id)).status == "stopped"
    # The next turn sends the stopped exchange whole.
    await send(services, agent, "never mind", conv.uuid)
    assert [m["role"] for m in fake_llm.requests[-1]["messages"]] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
    ]


async def test_a_server_that_cannot_start_leaves_the_agent_working_and_says_why(
    services, fake_llm, mcp_agent, tmp_path
) -> None:
    script = tmp_path / "dies.py"
    script.write_text("import sys\nprint('missing API token', file=sys.stderr)\nsys.exit(2)\n")
    agent = mcp_agent(
        "degraded",
        {
            "gone": {"command": str(tmp_path / "no-such-program")},
            "dies": {"command": sys.executable, "args": [str(script)]},
        },
        tools=["calculator"],
    )
    events = await send(services, agent, "hello")
    assert events[-1].data["status"] == "complete"
    assert [t["function"]["name"] for t in fake_llm.requests[0]["tools"]] == ["calculator"]
    tools = await info(services, agent)
    assert tools["builtin/calculator"].available
    gone, dies = tools["mcp:gone/*"], tools["mcp:dies/*"]
    assert not gone.available and not dies.available
    assert gone.reason.startswith("MCP server 'gone' failed to start: ")
    assert "No such file or directory" in gone.reason
    assert "missing API token" in dies.reason  # the last line it wrote to stderr
    log = (Path(services.settings.agents_dir) / agent / "logs" / "mcp-dies.log").read_text()
    assert "missing API token" in log


async def test_a_server_gets_only_the_environment_its_config_names(
    services, fake_llm, mcp_agent, monkeypatch
) -> None:
    monkeypatch.setenv("LUMINA_LLM_API_KEY", "sk-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "also-secret")
    agent = mcp_agent()
    fake_llm.script.replies = [Reply(calls=[Call("env", "environment")])]
    events = await send(services, agent, "what do you see?")
    names = set(json.loads(results(events)[0]["content"]))
    assert {"FAULTY_DIR", "PYTHONPATH", "PATH"} <= names
    allowed = {"FAULTY_DIR", "PYTHONPATH", "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM"}
    assert names - allowed <= {"LC_CTYPE"}  # Python sets that one itself
    assert not any(n.startswith(("LUMINA_", "AWS_", "REDIS", "DATABASE")) for n in names)


async def test_a_changed_tool_list_is_picked_up(services, fake_llm, mcp_agent) -> None:
    agent = mcp_agent()
    fake_llm.script.replies = [Reply(calls=[Call("g", "grow")])]
    await send(services, agent, "grow a tool")
    (server,) = services.tools.servers(agent)
    await wait_until(
        lambda: any(t.name == "grown" for t in server.tools), "the new tool", within=10
    )
    await send(services, agent, "what now?")
    assert "grown" in {t["function"]["name"] for t in fake_llm.requests[-1]["tools"]}


async def test_closing_the_app_stops_the_servers_and_a_config_change_replaces_one(
    settings_factory, mcp_agent, tmp_path
) -> None:
    from lumina_app.composition import open_services

    agent = mcp_agent()
    services = await open_services(settings_factory())
    services.registry.recheck_seconds = 0  # see each edit of the folder at once
    try:
        await services.agents.info(agent)
        (first,) = services.tools.servers(agent)
        first_pid = await pid_of(first)
        mcp_agent(toolTimeoutSeconds=5)  # not a server setting: the same server stays
        await services.agents.info(agent)
        assert services.tools.servers(agent) == [first]
        mcp_agent(servers={"faulty2": mcp_agent.faulty})  # renamed: a new server
        await services.agents.info(agent)
        (second,) = services.tools.servers(agent)
        assert second is not first
        await wait_until(lambda: not alive(first_pid), "the renamed server to stop", within=10)
        second_pid = await pid_of(second)
    finally:
        await services.close()
    assert not alive(second_pid)


async def pid_of(server) -> int:
    return int((await server.call("pid", {}, None)).text)


def running(script: Path) -> bool:
    """Whether some process runs ``script``."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if str(script).encode() in cmdline.read_bytes():
                return True
    return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_streamable_http_server(services, fake_llm, mcp_agent, tmp_path) -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAULTY_DIR": str(tmp_path)}
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "tests.mcp_servers.faulty", "--http", str(port)],
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"

        async def listening() -> bool:  # a bare TCP probe: a GET on /mcp would open its SSE
            try:
                _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                return False
            writer.close()
            return True

        await wait_until(listening, "the HTTP MCP server to listen", within=20)
        agent = mcp_agent("remote", {"remote": {"url": url, "headers": {"X-Test": "1"}}})
        fake_llm.script.replies = [Reply(calls=[Call("e", "echo", '{"text": "over http"}')])]
        events = await send(services, agent, "hello over http")
        assert results(events)[0]["content"] == "over http"
        assert (await info(services, agent))["mcp:remote/echo"].available
    finally:
        process.kill()  # terminate() would wait for our open session to end
        await process.wait()


async def test_a_run_waiting_for_a_server_to_start_can_be_stopped(
    services, fake_llm, mcp_agent, tmp_path
) -> None:
    script = tmp_path / "sleepy.py"
    script.write_text("import time\ntime.sleep(30)\n")
    agent = mcp_agent("sleepy", {"sleepy": {"command": sys.executable, "args": [str(script)]}})
    run = await services.chat.start_run(agent_id=agent, message="hi")
    await wait_until(lambda: running(script), "the run to start the server and wait on it")
    await asyncio.wait_for(services.chat.stop(run.run_id), 5)
    assert run.result.status == "stopped"
    message = await services.reads.runs.get_message(run.result.message_id)
    assert message.status is MessageStatus.STOPPED


async def test_the_shipped_agents_are_valid_and_toolsmith_starts_offline(
    settings_factory, tmp_path, monkeypatch
) -> None:
    import shutil

    from lumina_app.composition import open_services

    shutil.copytree(ROOT / "data" / "agents", tmp_path / "shipped" / "agents")
    # `make run` puts the venv first on PATH: its python has mcp_server_time.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    services = await open_services(settings_factory(data_dir=tmp_path / "shipped"))
    try:
        assert all(agent.available for agent in services.agents.list())
        tools = await info(services, "toolsmith")
        assert {name for name, tool in tools.items() if tool.available} == {
            "builtin/current_time",
            "builtin/calculator",
            "mcp:time/get_current_time",
            "mcp:time/convert_time",
        }
        events = await send(services, "toolsmith", '/tool get_current_time {"timezone": "UTC"}')
        assert json.loads(results(events)[0]["content"])["timezone"] == "UTC"
    finally:
        await services.close()
