"""``Lumina``: the synchronous client. Every method is one REST call (a paged listing, one
call per page); errors are :mod:`lumina_client.errors`. Retries: a GET after a connection
failure, a timeout or a 502/503/504; any request whose connection could not be opened (it
never reached the server). Nothing else is sent twice."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx

from lumina_client import _calls as calls
from lumina_client._calls import Call, ExportFormat
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

RETRY_STATUSES = frozenset({502, 503, 504})
NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def backoff(attempt: int) -> float:
    return min(0.25 * 2**attempt, 4.0)


def client_headers(api_key: str | None) -> dict[str, str]:
    headers = {"User-Agent": "lumina-client/0.1"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def should_retry(
    call: Call, attempt: int, max_retries: int, exc: Exception | None, status: int
) -> bool:
    if attempt >= max_retries:
        return False
    if exc is not None:
        return isinstance(exc, NEVER_SENT) or call.retryable
    return call.retryable and status in RETRY_STATUSES


class Lumina:
    """``Lumina("http://127.0.0.1:3000", api_key="...")``; no key on a local server that
    answers loopback callers."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:3000",
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.max_retries = max_retries
        self._http = http_client or httpx.Client(timeout=timeout)
        self._base = base_url.rstrip("/")
        self._headers = client_headers(api_key)
        self.conversations = Conversations(self)
        self.messages = Messages(self)
        self.runs = Runs(self)
        self.memories = Memories(self)

    def __enter__(self) -> Lumina:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _request(self, call: Call) -> httpx.Request:
        return self._http.build_request(
            call.method,
            self._base + call.path,
            params=call.params,
            json=call.json,
            headers={**self._headers, **call.headers},
        )

    def send(self, call: Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.send(self._request(call))
            except httpx.TransportError as exc:
                if not should_retry(call, attempt, self.max_retries, exc, 0):
                    raise LuminaConnectionError(f"{call.method} {call.path}: {exc}") from exc
            else:
                if response.is_success:
                    return call.parse(response)
                if not should_retry(call, attempt, self.max_retries, None, response.status_code):
                    raise error_from(response)
            time.sleep(backoff(attempt))
            attempt += 1

    def pages(self, first: Call, follow: Any) -> Iterator[Any]:
        call: Call | None = first
        while call is not None:
            items, nxt = self.send(call)
            yield from items
            call = follow(nxt) if nxt is not None else None

    # -- the top-level calls -------------------------------------------------------------

    def stream(
        self,
        agent: str,
        task: str,
        conversation_id: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> Iterator[StreamEvent]:
        """Run ``agent`` on ``task`` and yield its events as they come: a SessionEvent
        (conversation and run ids), ChunkEvents, tool events, then DoneEvent or ErrorEvent."""
        call = calls.stream(agent, task, conversation_id, idempotency_key)
        try:
            response = self._http.send(self._request(call), stream=True)
            try:
                if not response.is_success:
                    response.read()
                    raise error_from(response)
                parser = calls.SSEParser()
                for line in response.iter_lines():
                    event = parser.line(line)
                    if event is not None:
                        yield event
            finally:
                response.close()
        except httpx.TransportError as exc:
            raise LuminaConnectionError(f"stream: {exc}") from exc

    def recall(self, query: str, *, agent: str | None = None, limit: int = 10) -> list[Hit]:
        """The caller's messages most relevant to ``query``, across conversations."""
        return self.send(calls.recall(query, agent, limit))

    def export(self, conversation_id: str, format: ExportFormat = "json") -> Any:
        """json: a dict {meta, history}; md: Markdown text; archive: the zip's bytes."""
        return self.send(calls.export(conversation_id, format))


class Conversations:
    def __init__(self, client: Lumina) -> None:
        self._c = client

    def create(
        self, agent: str, *, title: str | None = None, temporary: bool = False
    ) -> Conversation:
        return self._c.send(calls.create_conversation(agent, title, temporary))

    def list(
        self, *, agent: str | None = None, query: str | None = None, page_size: int = 50
    ) -> Iterator[Conversation]:
        """Every conversation (of ``agent``), newest activity first, a page at a time."""
        return self._c.pages(
            calls.conversation_page(agent, page_size, None, query),
            lambda cursor: calls.conversation_page(agent, page_size, cursor, query),
        )

    def get(self, conversation_id: str) -> Conversation:
        return self._c.send(calls.get_conversation(conversation_id))

    def delete(self, conversation_id: str) -> None:
        self._c.send(calls.delete_conversation(conversation_id))


class Messages:
    def __init__(self, client: Lumina) -> None:
        self._c = client

    def list(
        self, conversation_id: str, *, after: int | None = None, page_size: int = 100
    ) -> Iterator[Message]:
        """The conversation's messages in seq order (after seq ``after``), a page at a time."""
        return self._c.pages(
            calls.message_page(conversation_id, page_size, after),
            lambda nxt: calls.message_page(conversation_id, page_size, nxt),
        )

    def append(self, conversation_id: str, messages: list[tuple[str, str]]) -> list[int]:
        """Store (role, text) messages without running a model; their message ids."""
        return self._c.send(calls.append_messages(conversation_id, messages))

    def delete(self, conversation_id: str, message_id: int) -> None:
        self._c.send(calls.delete_message(conversation_id, message_id))


class Runs:
    def __init__(self, client: Lumina) -> None:
        self._c = client

    def start(
        self,
        agent: str,
        task: str,
        conversation_id: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> RunAccepted:
        """Start a run in the background (202); follow it with ``get``."""
        return self._c.send(calls.start_run(agent, task, conversation_id, idempotency_key))

    def execute(
        self,
        agent: str,
        task: str,
        conversation_id: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> Answer:
        """Run and wait for the whole answer."""
        return self._c.send(calls.execute(agent, task, conversation_id, idempotency_key))

    def get(self, run_id: str) -> Run:
        return self._c.send(calls.get_run(run_id))

    def stop(self, run_id: str) -> Run:
        return self._c.send(calls.stop_run(run_id))

    def context(self, run_id: str) -> RunContext:
        """Exactly what the run's model was sent."""
        return self._c.send(calls.run_context(run_id))


class Memories:
    def __init__(self, client: Lumina) -> None:
        self._c = client

    def list(
        self, *, agent: str | None = None, status: str | None = None, limit: int = 200
    ) -> list[Memory]:
        return self._c.send(calls.list_memories(agent, None, status, limit))

    def search(self, query: str, *, agent: str | None = None, limit: int = 20) -> list[Memory]:
        return self._c.send(calls.list_memories(agent, query, None, limit))

    def add(self, text: str, *, agent: str, pinned: bool = False) -> Memory:
        """The memory (the same fact already known is returned, not kept twice)."""
        return self._c.send(calls.add_memory(agent, text, pinned))

    def get(self, memory_id: int) -> Memory:
        return self._c.send(calls.get_memory(memory_id))

    def update(
        self,
        memory_id: int,
        *,
        text: str | None = None,
        pinned: bool | None = None,
        supersede: bool = False,
    ) -> Memory:
        """Correct in place, or with ``supersede`` keep the old text as history."""
        return self._c.send(calls.update_memory(memory_id, text, pinned, supersede))

    def delete(self, memory_id: int) -> None:
        self._c.send(calls.delete_memory(memory_id))
