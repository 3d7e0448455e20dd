"""Built-in tools, safe offline: ``current_time`` and ``calculator``.

A built-in is an async function of its (schema-checked) arguments and the call's
:class:`ToolContext` (the calling conversation and owner, for tools that need them),
returning text; it raises :class:`ToolError` for what the model should read as an error.
Adding one is a function and an entry in ``BUILTINS``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lumina_app.agents.tools.calculator import evaluate
from lumina_app.agents.tools.spec import Tool, ToolContext, ToolError, ToolOutput, ToolSpec

BuiltinFn = Callable[[dict[str, Any], ToolContext], Awaitable[str]]


async def current_time(args: dict[str, Any], _ctx: ToolContext) -> str:
    name = args.get("timezone") or "UTC"
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(
            f"unknown timezone {name!r}: use an IANA name such as Europe/Paris or UTC"
        ) from None
    now = datetime.now(zone)
    return f"{now.isoformat(timespec='seconds')} ({now:%A}, {name})"


async def calculator(args: dict[str, Any], _ctx: ToolContext) -> str:
    return str(evaluate(args["expression"]))


BUILTINS: dict[str, tuple[ToolSpec, BuiltinFn]] = {
    "current_time": (
        ToolSpec(
            "current_time",
            "The current date and time in a timezone (ISO 8601, with the weekday).",
            {
                "type": "object",
                "properties": {
                    "timezone": {
                        "type": "string",
                        "description": "IANA timezone name, e.g. Europe/Paris; default UTC",
                    }
                },
                "additionalProperties": False,
            },
        ),
        current_time,
    ),
    "calculator": (
        ToolSpec(
            "calculator",
            "Evaluates an arithmetic expression exactly: + - * / // % **, parentheses, "
            "sqrt, exp, log, log2, log10, sin, cos, tan, floor, ceil, abs, round, min, max, "
            "pi, e.",
            {
                "type": "object",
                "properties": {
                    "expression": {"type": "string", "description": "e.g. (2 + 3) * sqrt(16)"}
                },
                "required": ["expression"],
                "additionalProperties": False,
            },
        ),
        calculator,
    ),
}


def builtin_tool(name: str) -> Tool:
    spec, fn = BUILTINS[name]

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(await fn(args, ctx))

    return Tool(spec, invoke)
