"""Running one step's tool calls: in parallel, each checked against its tool's schema,
bounded in time, its output made storable and capped at 16 KB (with a marker). Whatever
a call does — an unknown tool, bad arguments, an error, a timeout, a crash — the model
gets a result for it; only cancellation (stop) ends the step early."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from lumina_app.agents.tools.schema import parse_arguments
from lumina_app.agents.tools.spec import (
    RESULT_MAX_BYTES,
    TRUNCATED,
    Toolbox,
    ToolContext,
    ToolError,
)
from lumina_app.domain import ToolCall
from lumina_app.domain.text import clip_utf8, storable

log = logging.getLogger(__name__)


@dataclass(slots=True)
class CallResult:
    """What the model gets back for one call (and what its TOOL row stores)."""

    call: ToolCall
    content: str
    is_error: bool
    duration_ms: int
    truncated: bool = False


OnResult = Callable[[CallResult], Awaitable[None]]


class ToolRunner:
    def __init__(self, toolbox: Toolbox, context: ToolContext, *, timeout: float) -> None:
        self.toolbox = toolbox
        self.context = context
        self.timeout = timeout

    async def run(
        self,
        calls: Sequence[ToolCall],
        results: dict[str, CallResult],
        on_result: OnResult,
    ) -> None:
        """Run ``calls`` at once, filling ``results`` (by call id) as each ends. Cancelled
        (the run was stopped), the calls still going are cancelled too — an MCP server
        hears ``notifications/cancelled`` — and are missing from ``results``."""
        async with asyncio.TaskGroup() as group:
            for call in calls:
                group.create_task(self._run(call, results, on_result))

    async def _run(self, call: ToolCall, results: dict[str, CallResult], on: OnResult) -> None:
        result = await self.call(call)
        results[call.call_id] = result
        await on(result)

    async def call(self, call: ToolCall) -> CallResult:
        started = time.perf_counter()
        text, is_error = await self._output(call)
        content, truncated = clip_utf8(storable(text), RESULT_MAX_BYTES, TRUNCATED)
        duration = round((time.perf_counter() - started) * 1000)
        return CallResult(call, content, is_error, duration, truncated)

    async def _output(self, call: ToolCall) -> tuple[str, bool]:
        tool = self.toolbox.tools.get(call.name)
        try:
            if tool is None:
                known = ", ".join(self.toolbox.tools) or "none"
                raise ToolError(f"there is no tool named {call.name!r} (tools: {known})")
            arguments = parse_arguments(tool.spec, call.arguments)
            async with asyncio.timeout(self.timeout):
                output = await tool.invoke(arguments, self.context)
        except ToolError as exc:
            return f"Error: {exc}", True
        except TimeoutError:
            return f"Error: {call.name} did not answer within {self.timeout:g} s", True
        except Exception as exc:  # a bug in a tool must not cost the turn
            log.exception("tool %s crashed", call.name)
            # What it said stays in the log: it may name files, hosts or settings.
            return f"Error: {call.name} crashed ({type(exc).__name__})", True
        return output.text, output.is_error


def cancelled(call: ToolCall, reason: str, duration_ms: int) -> CallResult:
    """The result recorded for a call a stop cut short (or that never ran)."""
    return CallResult(call, f"Error: {reason}", True, duration_ms)
