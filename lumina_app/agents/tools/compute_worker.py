"""The worker process of ``sandbox.ComputePool``, one per pool slot: it reads one JSON
request a line on stdin — ``{"tool": name, "args": {...}}`` — and answers one JSON line on
stdout: ``{"ok": text}``, ``{"error": message}`` (a ToolError, for the model) or
``{"crash": traceback}`` (a bug). Its address space is capped; it exits when stdin closes.
It imports only what its tools need."""

from __future__ import annotations

import json
import resource
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

from lumina_app.agents.tools.calculator import evaluate
from lumina_app.agents.tools.spec import ToolError

PureTool = Callable[[dict[str, Any]], str]


def calculator(args: dict[str, Any]) -> str:
    return str(evaluate(args["expression"]))


TOOLS: dict[str, PureTool] = {"calculator": calculator}


def serve(tools: dict[str, PureTool], memory_bytes: int) -> None:
    """Answer requests until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is for the server, which kills us
    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    out = sys.stdout
    out.write('{"ready": true}\n')
    out.flush()
    for line in sys.stdin:
        out.write(json.dumps(_answer(tools, line)) + "\n")
        out.flush()


def _answer(tools: dict[str, PureTool], line: str) -> dict[str, str]:
    try:
        request = json.loads(line)
        return {"ok": tools[request["tool"]](request["args"])}
    except ToolError as exc:
        return {"error": str(exc)}
    except MemoryError:
        return {"error": "the computation ran out of memory"}
    except Exception:  # a bug: the server logs it
        return {"crash": traceback.format_exc(limit=20)}


if __name__ == "__main__":
    serve(TOOLS, int(sys.argv[1]) if len(sys.argv) > 1 else 0)
