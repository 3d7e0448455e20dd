"""Every request the client makes, as data (method, path, query, body, how to read the
answer), shared by the sync and async clients; no I/O here. Also the SSE line parser."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

import httpx

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
    event_of,
)

ExportFormat = Literal["json", "md", "archive"]
ROLES = {"user", "assistant", "system"}


def _seg(value: str | int) -> str:
    """One path segment, escaped (an id is never a path)."""
    return quote(str(value), safe="")


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    parse: Callable[[httpx.Response], Any] = lambda r: None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def retryable(self) -> bool:
        """Only a GET is sent again after a failure the server may have acted on."""
        return self.method == "GET"


def _one(model: Any) -> Callable[[httpx.Response], Any]:
    return lambda r: model.model_validate(r.json())


def _items(model: Any) -> Callable[[httpx.Response], Any]:
    return lambda r: [model.model_validate(i) for i in r.json()["items"]]


# -- conversations and messages -------------------------------------------------------------


def create_conversation(agent: str, title: str | None, temporary: bool) -> Call:
    body = _drop_none({"agentId": agent, "title": title, "temporary": temporary or None})
    return Call("POST", "/api/v1/conversations", json=body, parse=_one(Conversation))


def conversation_page(agent: str | None, limit: int, cursor: str | None, q: str | None) -> Call:
    params = _drop_none({"agentId": agent, "limit": limit, "after": cursor, "q": q})

    def parse(r: httpx.Response) -> tuple[list[Conversation], str | None]:
        body = r.json()
        return [Conversation.model_validate(i) for i in body["items"]], body["nextCursor"]

    return Call("GET", "/api/v1/conversations", params=params, parse=parse)


def get_conversation(conversation_id: str) -> Call:
    path = f"/api/v1/conversations/{_seg(conversation_id)}"
    return Call("GET", path, parse=_one(Conversation))


def delete_conversation(conversation_id: str) -> Call:
    return Call("DELETE", f"/api/v1/conversations/{_seg(conversation_id)}")


def message_page(conversation_id: str, limit: int, after: int | None) -> Call:
    params = _drop_none({"limit": limit, "after": after})

    def parse(r: httpx.Response) -> tuple[list[Message], int | None]:
        body = r.json()
        return [Message.model_validate(i) for i in body["items"]], body["nextAfter"]

    path = f"/api/v1/conversations/{_seg(conversation_id)}/messages"
    return Call("GET", path, params=params, parse=parse)


def append_messages(conversation_id: str, messages: list[tuple[str, str]]) -> Call:
    """Stored as final rows without running a model (the Conversations API's items)."""
    items = []
    for role, text in messages:
        if role not in ROLES:
            raise ValueError(f"role must be one of {sorted(ROLES)}, not {role!r}")
        items.append({"type": "message", "role": role, "content": text})

    def parse(r: httpx.Response) -> list[int]:
        return [int(item["id"].removeprefix("msg_")) for item in r.json()["data"]]

    path = f"/v1/conversations/conv_{_seg(conversation_id)}/items"
    return Call("POST", path, json={"items": items}, parse=parse)


def delete_message(conversation_id: str, message_id: int) -> Call:
    path = f"/v1/conversations/conv_{_seg(conversation_id)}/items/msg_{int(message_id)}"
    return Call("DELETE", path)


def export(conversation_id: str, fmt: ExportFormat) -> Call:
    def parse(r: httpx.Response) -> Any:
        if fmt == "json":
            return r.json()
        return r.text if fmt == "md" else r.content

    path = f"/api/v1/conversations/{_seg(conversation_id)}/export"
    return Call("GET", path, params={"format": fmt}, parse=parse)


# -- runs -----------------------------------------------------------------------------------


def _task(task: str, conversation_id: str | None) -> dict[str, Any]:
    return _drop_none({"task": task, "conversationId": conversation_id})


def _key(idempotency_key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": idempotency_key} if idempotency_key else {}


def stream(agent: str, task: str, conversation_id: str | None, key: str | None) -> Call:
    path = f"/api/v1/agents/{_seg(agent)}/execute/stream"
    headers = {"Accept": "text/event-stream", **_key(key)}
    return Call("POST", path, json=_task(task, conversation_id), headers=headers)


def start_run(agent: str, task: str, conversation_id: str | None, key: str | None) -> Call:
    path = f"/api/v1/agents/{_seg(agent)}/execute"
    return Call(
        "POST", path, json=_task(task, conversation_id), parse=_one(RunAccepted), headers=_key(key)
    )


def execute(agent: str, task: str, conversation_id: str | None, key: str | None) -> Call:
    path = f"/api/v1/agents/{_seg(agent)}/execute/sync"
    return Call(
        "POST", path, json=_task(task, conversation_id), parse=_one(Answer), headers=_key(key)
    )


def get_run(run_id: str) -> Call:
    return Call("GET", f"/api/v1/runs/{_seg(run_id)}", parse=_one(Run))


def stop_run(run_id: str) -> Call:
    return Call("POST", f"/api/v1/runs/{_seg(run_id)}/stop", parse=_one(Run))


def run_context(run_id: str) -> Call:
    return Call("GET", f"/api/v1/runs/{_seg(run_id)}/context", parse=_one(RunContext))


# -- recall and memories --------------------------------------------------------------------


def recall(query: str, agent: str | None, limit: int) -> Call:
    params = _drop_none({"q": query, "agentId": agent, "limit": limit})
    return Call("GET", "/api/v1/recall", params=params, parse=_items(Hit))


def list_memories(agent: str | None, query: str | None, status: str | None, limit: int) -> Call:
    params = _drop_none({"agentId": agent, "q": query, "status": status, "limit": limit})
    return Call("GET", "/api/v1/memories", params=params, parse=_items(Memory))


def add_memory(agent: str, text: str, pinned: bool) -> Call:
    body = {"agentId": agent, "text": text, "pinned": pinned}
    return Call("POST", "/api/v1/memories", json=body, parse=_one(Memory))


def get_memory(memory_id: int) -> Call:
    return Call("GET", f"/api/v1/memories/{int(memory_id)}", parse=_one(Memory))


def update_memory(memory_id: int, text: str | None, pinned: bool | None, supersede: bool) -> Call:
    body = _drop_none({"text": text, "pinned": pinned, "supersede": supersede or None})
    return Call("PATCH", f"/api/v1/memories/{int(memory_id)}", json=body, parse=_one(Memory))


def delete_memory(memory_id: int) -> Call:
    return Call("DELETE", f"/api/v1/memories/{int(memory_id)}")


# -- SSE ------------------------------------------------------------------------------------


class SSEParser:
    """Feeds on lines, hands back each complete frame's typed event (comments skipped)."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._id: int | None = None

    def line(self, line: str) -> StreamEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "id" and value.isdigit():
            self._id = int(value)
        return None

    def _dispatch(self) -> StreamEvent | None:
        if not self._data:
            return None
        data, self._data = "\n".join(self._data), []
        return event_of(json.loads(data), self._id)
