"""Built-in tools, safe offline: ``current_time`` and ``calculator``.

A built-in is an async function of its (schema-checked) arguments and the call's
:class:`ToolContext` (the calling conversation and owner, for tools that need them),
returning text; it raises :class:`ToolError` for what the model should read as an error.
One whose cost depends on its input (``calculator``) is a plain function in
``compute_worker.TOOLS`` instead, run in a worker process with a deadline (``sandbox.py``).
Adding one is a function and an entry in ``BUILTINS``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lumina_app.agents.tools.compute_worker import TOOLS as COMPUTED
from lumina_app.agents.tools.sandbox import ComputePool
from lumina_app.agents.tools.spec import (
    Tool,
    ToolContext,
    ToolError,
    ToolOutput,
    ToolSpec,
    quoted,
)

BuiltinFn = Callable[[dict[str, Any], ToolContext], Awaitable[str]]

# An IANA name: "UTC", "Europe/Paris", "America/Argentina/Buenos_Aires", "Etc/GMT+5".
_ZONE = re.compile(r"[A-Za-z0-9_+-]{1,32}(?:/[A-Za-z0-9_+-]{1,32}){0,2}")


async def current_time(args: dict[str, Any], _ctx: ToolContext) -> str:
    name = args.get("timezone") or "UTC"
    return _now_in(_zone(name), name)


def _zone(name: str) -> ZoneInfo:
    """The zone named ``name``; ToolError naming it (cut short), never where it was looked
    for: a folder ("Europe") or an overlong name fails in the file system, with its path."""
    unknown = ToolError(
        f"unknown time zone {quoted(name)}: use an IANA name such as Europe/Paris or UTC"
    )
    if not isinstance(name, str) or not _ZONE.fullmatch(name):
        raise unknown
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise unknown from None


def _now_in(zone: ZoneInfo, name: str) -> str:
    now = datetime.now(zone)
    return f"{now.isoformat(timespec='seconds')} ({now:%A}, {name})"


BUILTINS: dict[str, ToolSpec] = {
    "current_time": ToolSpec(
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
    "calculator": ToolSpec(
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
}
IN_PROCESS: dict[str, BuiltinFn] = {"current_time": current_time}


def builtin_tool(name: str, compute: ComputePool | None = None) -> Tool:
    """The built-in ``name``; one computed in a worker process needs the ``compute`` pool."""
    spec = BUILTINS[name]
    if name in COMPUTED:
        if compute is None:
            raise ValueError(f"the built-in {name} runs in a worker process: give a ComputePool")
        pool = compute

        async def computed(args: dict[str, Any], _ctx: ToolContext) -> ToolOutput:
            return ToolOutput(await pool.run(name, args))

        return Tool(spec, computed)
    fn = IN_PROCESS[name]

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(await fn(args, ctx))

    return Tool(spec, invoke)
