"""An MCP server with the faults Lumina must survive, built with the SDK's ``MCPServer``.

Run as ``python -m tests.mcp_servers.faulty [--http PORT]`` (stdio by default). Tools:
``echo``, ``slow`` (sleeps; a cancellation is written to $FAULTY_DIR/cancelled), ``crash``
(the process exits mid-call), ``huge`` (a big result), ``fail`` (an error result),
``environment`` (the variable names it got), ``pid``, ``grow`` (adds a tool and says the list
changed), and two tools Lumina must refuse to offer: one with an invalid input schema
and one whose name is not a usable function name.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("faulty", version="1")


def _mark(name: str) -> None:
    """Leave a trace the test can read (in $FAULTY_DIR)."""
    folder = os.environ.get("FAULTY_DIR")
    if folder:
        with (Path(folder) / name).open("a", encoding="utf-8") as f:
            f.write("x\n")


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then says so."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _mark("cancelled")
        raise
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """The server process exits while answering."""
    os._exit(3)


@server.tool()
def huge(kilobytes: int) -> str:
    """A result of that many kilobytes."""
    return "ab" * (kilobytes * 512)


@server.tool()
def fail(message: str) -> str:
    """Fails with the message."""
    raise ToolError(message)


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool()
def environment() -> str:
    """The names of the environment variables this process got."""
    return json.dumps(sorted(os.environ))


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool ``grown`` and tells the client the tool list changed."""
    server.add_tool(lambda: "grown up", name="grown", description="Added later.")
    await ctx.notify_tools_changed()
    return "grown"


@server.tool()
def broken_schema(x: str) -> str:
    """Has an input schema that is not valid JSON Schema."""
    return x


@server.tool(name="bad name!")
def bad_name() -> str:
    """Has a name no model can call."""
    return "?"


# The SDK derives schemas from signatures; this one is broken by hand.
server._tool_manager.get_tool("broken_schema").parameters = {
    "type": "object",
    "properties": {"x": {"type": "no-such-type"}},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, help="serve streamable HTTP on this port")
    args = parser.parse_args()
    _mark("starts")
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
