"""``AsyncLumina``: the asyncio client, method for method the same as ``Lumina``
(``lumina_client.client``): the same calls, errors and retry rules."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx

from lumina_client import _calls as calls
from lumina_client._calls import Call, ExportFormat
from lumina_client.client import backoff, client_headers, should_retry
from lumina_client.errors import LuminaConnectionError, error_from
from lumina_client.models import (
    Answer,
    Conversation,
    Hit,
    Memory,
    Message,
    Run,
    RunAccepted,
    RunContext,
    StreamEvent,
)


class AsyncLumina:
    """``AsyncLumina("http://127.0.0.1:3000", api_key="...")``; use ``async with`` or
    ``await client.close()``."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:3000",
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.max_retries = max_retries
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._base = base_url.rstrip("/")
        self._headers = client_headers(api_key)
        self.conversations = Conversations(self)
        self.messages = Messages(self)
        self.runs = Runs(self)
        self.memories = Memories(self)

    async def __aenter__(self) -> AsyncLumina:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    def _request(self, call: Call) -> httpx.Request:
        return self._http.build_request(
            call.method,
            self._base + call.path,
            params=call.params,
            json=call.json,
            headers={**self._headers, **call.headers},
        )

    async def send(self, call: Call) -> Any:
        attempt = 0
        while True:
            try:
                response = await self._http.send(self._request(call))
            except httpx.TransportError as exc:
                if not should_retry(call, attempt, self.max_retries, exc, 0):
                    raise LuminaConnectionError(f"{call.method} {call.path}: {exc}") from exc
            else:
                if response.is_success:
                    return call.parse(response)
                if not should_retry(call, attempt, self.max_retries, None, response.status_code):
                    raise error_from(response)
            await asyncio.sleep(backoff(attempt))
            attempt += 1

    async def pages(self, first: Call, follow: Any) -> AsyncIterator[Any]:
        call: Call | None = first
        while call is not None:
            items, nxt = await self.send(call)
            for item in items:
                yield item
            call = follow(nxt) if nxt is not None else None

    # -- the top-level calls -------------------------------------------------------------

    async def stream(
        self,
        agent: str,
        task: str,
        conversation_id: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Run ``agent`` on ``task`` and yield its events as they come: a SessionEvent
        (conversation and run ids), ChunkEvents, tool events, then DoneEvent or ErrorEvent."""
        call = calls.stream(agent, task, conversation_id, idempotency_key)
        try:
            response = await self._http.send(self._request(call), stream=True)
            try:
                if not response.is_success:
                    await response.aread()
                    raise error_from(response)
                parser = calls.SSEParser()
                async for line in response.aiter_lines():
                    event = parser.line(line)
                    if event is not None:
                        yield event
            finally:
                await response.aclose()
        except httpx.TransportError as exc:
            raise LuminaConnectionError(f"stream: {exc}") from exc

    async def recall(self, query: str, *, agent: str | None = None, limit: int = 10) -> list[Hit]:
        """The caller's messages most relevant to ``query``, across conversations."""
        return await self.send(calls.recall(query, agent, limit))

    async def export(self, conversation_id: str, format: ExportFormat = "json") -> Any:
        """json: a dict {meta, history}; md: Markdown text; archive: the zip's bytes."""
        return await self.send(calls.export(conversation_id, format))


class Conversations:
    def __init__(self, client: AsyncLumina) -> None:
        self._c = client

    async def create(
        self, agent: str, *, title: str | None = None, temporary: bool = False
    ) -> Conversation:
        return await self._c.send(calls.create_conversation(agent, title, temporary))

    def list(
        self, *, agent: str | None = None, query: str | None = None, page_size: int = 50
    ) -> AsyncIterator[Conversation]:
        """Every conversation (of ``agent``), newest activity first, a page at a time."""
        return self._c.pages(
            calls.conversation_page(agent, page_size, None, query),
            lambda cursor: calls.conversation_page(agent, page_size, cursor, query),
        )

    async def get(self, conversation_id: str) -> Conversation:
        return await self._c.send(calls.get_conversation(conversation_id))

    async def delete(self, conversation_id: str) -> None:
        await self._c.send(calls.delete_conversation(conversation_id))


class Messages:
    def __init__(self, client: AsyncLumina) -> None:
        self._c = client

    def list(
        self, conversation_id: str, *, after: int | None = None, page_size: int = 100
    ) -> AsyncIterator[Message]:
        """The conversation's messages in seq order (after seq ``after``), a page at a time."""
        return self._c.pages(
            calls.message_page(conversation_id, page_size, after),
            lambda nxt: calls.message_page(conversation_id, page_size, nxt),
        )

    async def append(self, conversation_id: str, messages: list[tuple[str, str]]) -> list[int]:
        """Store (role, text) messages without running a model; their message ids."""
        return await self._c.send(calls.append_messages(conversation_id, messages))

    async def delete(self, conversation_id: str, message_id: int) -> None:
        await self._c.send(calls.delete_message(conversation_id, message_id))


class Runs:
    def __init__(self, client: AsyncLumina) -> None:
        self._c = client

    async def start(
        self,
        agent: str,
        task: str,
        conversation_id: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> RunAccepted:
        """Start a run in the background (202); follow it with ``get``."""
        return await self._c.send(calls.start_run(agent, task, conversation_id, idempotency_key))

    async def execute(
        self,
        agent: str,
        task: str,
        conversation_id: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> Answer:
        """Run and wait for the whole answer."""
        return await self._c.send(calls.execute(agent, task, conversation_id, idempotency_key))

    async def get(self, run_id: str) -> Run:
        return await self._c.send(calls.get_run(run_id))

    async def stop(self, run_id: str) -> Run:
        return await self._c.send(calls.stop_run(run_id))

    async def context(self, run_id: str) -> RunContext:
        """Exactly what the run's model was sent."""
        return await self._c.send(calls.run_context(run_id))


class Memories:
    def __init__(self, client: AsyncLumina) -> None:
        self._c = client

    async def list(
        self, *, agent: str | None = None, status: str | None = None, limit: int = 200
    ) -> list[Memory]:
        return await self._c.send(calls.list_memories(agent, None, status, limit))

    async def search(
        self, query: str, *, agent: str | None = None, limit: int = 20
    ) -> list[Memory]:
        return await self._c.send(calls.list_memories(agent, query, None, limit))

    async def add(self, text: str, *, agent: str, pinned: bool = False) -> Memory:
        """The memory (the same fact already known is returned, not kept twice)."""
        return await self._c.send(calls.add_memory(agent, text, pinned))

    async def get(self, memory_id: int) -> Memory:
        return await self._c.send(calls.get_memory(memory_id))

    async def update(
        self,
        memory_id: int,
        *,
        text: str | None = None,
        pinned: bool | None = None,
        supersede: bool = False,
    ) -> Memory:
        """Correct in place, or with ``supersede`` keep the old text as history."""
        return await self._c.send(calls.update_memory(memory_id, text, pinned, supersede))

    async def delete(self, memory_id: int) -> None:
        await self._c.send(calls.delete_memory(memory_id))
