"""One MCP server of one agent, through the official SDK's ``Client``.

Started when the agent first needs it and shared by the agent's runs; restarted on the
next use after it died; its tool list is cached and refreshed when the server says it
changed (``notifications/tools/list_changed``, or a ``subscriptions/listen`` event on
2026-era connections). A server that cannot start is not retried for ``retry_seconds``:
meanwhile the agent runs without its tools, and ``reason`` says why.

The SDK's client lives in one task per server (its cancel scopes are task-bound); runs call
tools from their own tasks. A stdio server gets only the environment its config names
plus the SDK's minimal set (PATH, HOME, USER, LOGNAME, SHELL, TERM): none of the app's
variables, so no secrets. Its stderr goes to ``<agent>/logs/mcp-<server>.log``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import IO, Any

import anyio
from mcp import Client, StdioServerParameters, stdio_client
from mcp import types as mcp_types
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from pydantic import ValidationError

from lumina_app.agents.definitions.tool_config import McpServerConfig
from lumina_app.agents.tools.mcp_transport import Watched, http_transport, result_text
from lumina_app.agents.tools.spec import ToolContext, ToolError, ToolOutput, ToolSpec
from lumina_app.domain.tasks import keep

log = logging.getLogger(__name__)

CLIENT_INFO = mcp_types.Implementation(name="lumina", version="1")
_MAX_TOOL_PAGES = 20
_STDERR_TAIL = 600


class McpUnavailable(Exception):
    """The server cannot serve now; the message says why (shown in the agent's info)."""


class McpServer:
    def __init__(
        self,
        config: McpServerConfig,
        *,
        folder: Path,
        start_timeout: float,
        retry_seconds: float,
        clock=time.monotonic,
    ) -> None:
        self.config = config
        self.folder = folder
        self.start_timeout = start_timeout
        self.retry_seconds = retry_seconds
        self._clock = clock
        self.tools: list[ToolSpec] = []
        self.reason: str | None = None
        self.starts = 0
        self._failed_at = -float("inf")
        self._client: Client | None = None
        self._task: asyncio.Task | None = None
        self._ready: asyncio.Future | None = None
        self._ended = asyncio.Event()
        self._closing = False
        self._background: set[asyncio.Task] = set()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def running(self) -> bool:
        return self._client is not None and not self._ended.is_set()

    # -- lifecycle ---------------------------------------------------------------------

    async def ensure(self) -> list[ToolSpec]:
        """The server's tools, starting (or restarting) it first if needed."""
        if self._task is None or self._task.done() or self._ended.is_set():
            if self._clock() - self._failed_at < self.retry_seconds:
                raise McpUnavailable(self.reason or "failed to start")
            self._launch()
        assert self._ready is not None
        try:
            async with asyncio.timeout(self.start_timeout):
                # Shielded: a run stopped while waiting must not abort a start others share.
                await asyncio.shield(self._ready)
        except TimeoutError:
            self._fail(f"did not start within {self.start_timeout:g} s")
            if self._task is not None:
                self._task.cancel()  # the SDK still stops the process it started
            raise McpUnavailable(self.reason) from None
        return self.tools

    def _launch(self) -> None:
        self._closing = False
        self._ended = asyncio.Event()
        self._ready = asyncio.get_running_loop().create_future()
        self._ready.add_done_callback(_consume)
        self.starts += 1
        self._task = asyncio.create_task(
            self._serve(self._ready, self._ended), name=f"mcp-{self.folder.name}-{self.name}"
        )

    async def _serve(self, ready: asyncio.Future, ended: asyncio.Event) -> None:
        """The client's whole life, in this one task: connect, list, wait for the end."""
        stderr, offset = self._stderr()
        try:
            async with Client(
                Watched(self._transport(stderr), ended),
                message_handler=self._on_message,
                client_info=CLIENT_INFO,
                cache=None,
            ) as client:
                self.tools = await self._list_tools(client)
                self._client, self.reason = client, None
                if not ready.done():
                    ready.set_result(None)
                listener = asyncio.create_task(self._listen(client))
                try:
                    await ended.wait()
                finally:
                    listener.cancel()
                    await asyncio.gather(listener, return_exceptions=True)
                if not self._closing:
                    log.warning("MCP server %r of %s exited", self.name, self.folder.name)
        except Exception as exc:
            reason = _describe(exc) + self._stderr_tail(stderr, offset)
            if ready.done():
                log.warning("MCP server %r of %s failed: %s", self.name, self.folder.name, reason)
            else:
                self._fail(reason)
        finally:
            self._client = None
            ended.set()
            if not ready.done():
                self._fail(self.reason or "stopped before it was ready")
            if stderr is not None:
                stderr.close()

    def _fail(self, reason: str) -> None:
        self.reason = f"MCP server {self.name!r} failed to start: {reason}"
        self._failed_at = self._clock()
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(McpUnavailable(self.reason))

    async def close(self) -> None:
        """Stop the server (stdin closed, then terminated if it lingers: the SDK's way)."""
        self._closing = True
        self._ended.set()
        task = self._task
        if task is not None:
            if self._client is None:
                task.cancel()  # still starting: the SDK stops the process it started
            await asyncio.wait([task], timeout=10)
        for background in self._background:
            background.cancel()

    # -- calls ---------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any], _ctx: ToolContext) -> ToolOutput:
        """Call a tool; cancelling this (stop, timeout) sends the server
        ``notifications/cancelled``. Failures come back as ToolError for the model."""
        if not self.running:
            try:
                await self.ensure()
            except McpUnavailable as exc:
                raise ToolError(str(exc)) from None
        client = self._client
        assert client is not None
        try:
            result = await client.call_tool(name, arguments)
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                self._ended.set()  # gone: the next use restarts it
                raise ToolError(
                    f"the MCP server {self.name!r} stopped during the call; "
                    "it is restarted for the next one"
                ) from None
            raise ToolError(f"MCP error {exc.code}: {exc.message}") from None
        except ValidationError as exc:
            raise ToolError(f"the MCP server sent an invalid result: {exc}") from None
        except RuntimeError as exc:  # the SDK's check of structured output against its schema
            raise ToolError(str(exc)) from None
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self._ended.set()
            raise ToolError(f"the MCP server {self.name!r} is unreachable: {exc}") from None
        return ToolOutput(result_text(result), is_error=bool(result.is_error))

    # -- tool list -----------------------------------------------------------------------

    async def _list_tools(self, client: Client) -> list[ToolSpec]:
        specs, cursor = [], None
        for _ in range(_MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            specs.extend(
                ToolSpec(t.name, t.description or t.title or "", t.input_schema, self.config.source)
                for t in page.tools
            )
            cursor = page.next_cursor
            if cursor is None:
                break
        return specs

    async def refresh(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            self.tools = await self._list_tools(client)
        except (MCPError, ValidationError, OSError) as exc:
            log.warning("MCP server %r: tool list not refreshed: %s", self.name, exc)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):  # 2025-era servers
            keep(self._background, self.refresh())

    async def _listen(self, client: Client) -> None:
        """2026-era servers announce tool changes on a ``subscriptions/listen`` stream."""
        capabilities = client.server_capabilities.tools
        if capabilities is None or not capabilities.list_changed:
            return
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        await self.refresh()
        except (ListenNotSupportedError, SubscriptionLost, MCPError, TimeoutError) as exc:
            log.debug("MCP server %r: no tool-change events: %s", self.name, exc)

    # -- transport -----------------------------------------------------------------------

    def _transport(self, stderr: IO[str] | None) -> Any:
        config = self.config
        if config.url is not None:
            return http_transport(config)
        cwd = self.folder / config.cwd if config.cwd else _default_cwd(self.folder)
        params = StdioServerParameters(
            command=config.command or "", args=list(config.args), env=dict(config.env), cwd=cwd
        )
        return stdio_client(params, errlog=stderr if stderr is not None else _DEVNULL)

    def _stderr(self) -> tuple[IO[str] | None, int]:
        """The server's stderr log, appended to; None (discarded) if it cannot be written."""
        if self.config.url is not None:
            return None, 0
        path = self.folder / "logs" / f"mcp-{self.name}.log"
        try:
            path.parent.mkdir(exist_ok=True)
            handle = path.open("a", encoding="utf-8")
        except OSError:
            return None, 0
        return handle, handle.tell()

    @staticmethod
    def _stderr_tail(stderr: IO[str] | None, offset: int) -> str:
        if stderr is None:
            return ""
        try:
            stderr.flush()
            path = Path(stderr.name)
            with path.open("rb") as log_file:
                log_file.seek(max(offset, path.stat().st_size - _STDERR_TAIL))
                tail = log_file.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
        return f" (stderr: {tail.splitlines()[-1]})" if tail else ""


_DEVNULL: Any = -3  # subprocess.DEVNULL, as anyio.open_process takes it


def _consume(future: asyncio.Future) -> None:
    """A start nobody waited for must not log 'exception was never retrieved'."""
    if not future.cancelled():
        future.exception()


def _default_cwd(folder: Path) -> Path:
    workspace = folder / "workspace"
    return workspace if workspace.is_dir() else folder


def _describe(exc: BaseException) -> str:
    """The first real error inside the SDK's (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.message
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
