"""How Lumina talks to an MCP server, below the SDK's ``Client``: the transport (stdio or
streamable HTTP with the config's headers), watched so that its end — the process exited,
the connection dropped — is noticed at once; and a tool result as the text a model reads."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
from mcp import types as mcp_types
from mcp.client.streamable_http import streamable_http_client

from lumina_app.agents.definitions.tool_config import McpServerConfig


@contextlib.asynccontextmanager
async def http_transport(config: McpServerConfig) -> AsyncIterator[Any]:
    """Streamable HTTP; with the config's headers (e.g. a bearer key) when it has some."""
    assert config.url is not None
    if not config.headers:
        async with streamable_http_client(config.url) as streams:
            yield streams
        return
    timeout = httpx2.Timeout(30, read=300)
    async with (
        httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout) as http,
        streamable_http_client(config.url, http_client=http) as streams,
    ):
        yield streams


def result_text(result: mcp_types.CallToolResult) -> str:
    """Text blocks as they are; other content named; structured content as JSON if that is
    all there is."""
    parts = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[resource {resource.uri}]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource link {block.uri}]")
        else:
            parts.append(f"[{block.type} content, {getattr(block, 'mime_type', '')}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


class Watched:
    """The transport, with its read stream watched: its end (the server process exited,
    the connection dropped) sets ``ended`` so the server is restarted on the next use."""

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self.inner = inner
        self.ended = ended

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self.inner.__aenter__()
        return WatchedRead(read, self.ended), write

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self.inner.__aexit__(*exc)


class WatchedRead:
    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self.inner = inner
        self.ended = ended

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self.inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self.ended.set()
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> WatchedRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> WatchedRead:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
