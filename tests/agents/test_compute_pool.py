"""Built-in tools that compute run in worker processes (issue #24): the event loop keeps
serving while one spins, a deadline — the pool's own or the agent's
``toolTimeoutSeconds`` — or a stop kills the work, and a worker that dies, crashes or runs
out of memory costs one clear tool error, never the next call."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator

import pytest

from lumina_app.agents.tools.builtin import builtin_tool
from lumina_app.agents.tools.runner import ToolRunner
from lumina_app.agents.tools.sandbox import ComputePool
from lumina_app.agents.tools.spec import Tool, Toolbox, ToolContext, ToolError, ToolOutput, ToolSpec
from lumina_app.domain import ToolCall

pytestmark = pytest.mark.unit

CONTEXT = ToolContext("agent", "conversation", "owner", "run-1")
MISBEHAVING = "tests.agents.misbehaving_worker"


@pytest.fixture
async def pool() -> AsyncIterator[ComputePool]:
    pool = ComputePool(workers=2, deadline=0.5, module=MISBEHAVING, memory_bytes=512 * 1024**2)
    yield pool
    await pool.close()
    assert pool.pids() == []


async def gone(pid: int, within: float = 5.0) -> bool:
    """Whether process ``pid`` has ended (and been reaped) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        await asyncio.sleep(0.02)
    return False


class Ticker:
    """Measures the event loop's longest stall while it runs."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task | None = None

    async def _tick(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now

    def __enter__(self) -> Ticker:
        self._task = asyncio.get_running_loop().create_task(self._tick())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def pooled(pool: ComputePool, name: str) -> Tool:
    async def invoke(args: dict, _ctx: ToolContext) -> ToolOutput:
        return ToolOutput(await pool.run(name, args))

    return Tool(ToolSpec(name, name, {"type": "object"}), invoke)


async def test_a_call_past_the_deadline_is_killed_and_the_loop_never_stalls(pool) -> None:
    await pool.run("calculator", {"expression": "1 + 1"})  # a worker, started
    (first,) = pool.pids()
    with Ticker() as ticker:
        started = time.perf_counter()
        with pytest.raises(ToolError, match=r"spin did not finish within 0.5 s"):
            await pool.run("spin", {})
        elapsed = time.perf_counter() - started
    assert 0.5 <= elapsed < 2.0
    assert ticker.longest < 0.25  # the loop kept serving the whole time
    assert await gone(first)  # the work really ended: its process is gone
    assert await pool.run("calculator", {"expression": "6 * 7"}) == "42"  # a fresh worker
    assert pool.pids() != [first]


async def test_the_agents_tool_timeout_kills_the_work_too(pool) -> None:
    """``toolTimeoutSeconds`` (the runner's timeout) fires, and takes the worker with it."""
    pool.deadline = 60
    await pool.run("calculator", {"expression": "1"})
    (worker,) = pool.pids()
    runner = ToolRunner(Toolbox(tools={"spin": pooled(pool, "spin")}), CONTEXT, timeout=0.3)
    started = time.perf_counter()
    result = await runner.call(ToolCall("spin", "{}", "c1"))
    assert time.perf_counter() - started < 1.5
    assert (result.content, result.is_error) == ("Error: spin did not answer within 0.3 s", True)
    assert await gone(worker)


async def test_a_stop_kills_the_work(pool) -> None:
    await pool.run("calculator", {"expression": "1"})
    (worker,) = pool.pids()
    pool.deadline = 60
    task = asyncio.create_task(pool.run("spin", {}))
    done, _ = await asyncio.wait({task}, timeout=0.3)
    assert not done  # spinning in its worker
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(worker)


async def test_calls_run_in_parallel_up_to_the_pool_size(pool) -> None:
    started = time.perf_counter()
    results = await asyncio.gather(
        pool.run("spin", {}), pool.run("spin", {}), return_exceptions=True
    )
    assert all(isinstance(r, ToolError) for r in results)
    assert time.perf_counter() - started < 0.5 * 2 + 1.0  # side by side, not one after the other
    assert await pool.run("calculator", {"expression": "2 ** 10"}) == "1024"


async def test_a_worker_that_dies_or_runs_out_of_memory_costs_one_clear_error(pool) -> None:
    with pytest.raises(ToolError, match="die failed: its worker process stopped"):
        await pool.run("die", {})
    pool.deadline = 20
    with pytest.raises(ToolError, match="ran out of memory"):
        await pool.run("hog", {})  # 4 GB against a 512 MB address space
    assert await pool.run("calculator", {"expression": "6 * 7"}) == "42"


async def test_a_crash_is_logged_for_the_operator_and_told_to_the_model_plainly(
    pool, caplog
) -> None:
    runner = ToolRunner(Toolbox(tools={"boom": pooled(pool, "boom")}), CONTEXT, timeout=5)
    result = await runner.call(ToolCall("boom", "{}", "c1"))
    assert (result.content, result.is_error) == ("Error: boom crashed (WorkerCrashed)", True)
    (record,) = [r for r in caplog.records if r.getMessage() == "tool boom crashed"]
    assert "kaput in /srv/secret/path" in str(record.exc_info[1])  # the log has the details
    record.expected_in_test = True


async def test_a_worker_gets_none_of_the_servers_settings(pool, monkeypatch) -> None:
    monkeypatch.setenv("LUMINA_LLM_API_KEY", "sk-secret")
    names = json.loads(await pool.run("env", {}))
    assert not [n for n in names if n.startswith("LUMINA_")]
    assert "PYTHONPATH" in names


async def test_the_calculator_builtin_runs_in_the_pool() -> None:
    pool = ComputePool(workers=1, deadline=5)
    try:
        tool = builtin_tool("calculator", pool)
        with Ticker() as ticker:
            result = await tool.invoke({"expression": "round(1, -4*10**7)"}, CONTEXT)
    except ToolError as exc:
        assert "ndigits must be between -1000 and 1000" in str(exc)
    else:
        pytest.fail(f"no error: {result}")
    finally:
        assert len(pool.pids()) == 1  # it ran in a worker process
        await pool.close()
    assert ticker.longest < 0.5
    with pytest.raises(ValueError, match="give a ComputePool"):
        builtin_tool("calculator")
