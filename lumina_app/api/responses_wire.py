"""The Responses API's wire shapes: a response object (Open Responses' ``ResponseResource``,
every field present), message and function-call items, and the framer that turns a run's
events into the streaming events ``response.created`` … ``response.completed``."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any

from lumina_app.api.sse import frame
from lumina_app.domain import (
    AnswerChunk,
    Msg,
    MsgRole,
    RunEvent,
    RunFinished,
    RunStatus,
    ThinkingChunk,
    ToolCallRequested,
)
from lumina_app.services.file_types import RASTER_IMAGES
from lumina_app.services.openai_conversations import item_id
from lumina_app.services.responses import ClientCall, ResponseView, conversation_id

_STATUS = {
    RunStatus.RUNNING: "in_progress",
    RunStatus.COMPLETE: "completed",
    RunStatus.STOPPED: "cancelled",
    RunStatus.INTERRUPTED: "incomplete",
    RunStatus.FAILED: "failed",
}
_ITEM_STATUS = {"in_progress": "in_progress", "completed": "completed"}


def _seconds(when: datetime | None) -> int | None:
    return int(when.timestamp()) if when else None


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def namespaced(tools: list[dict[str, Any]] | None) -> dict[str, tuple[str, str]]:
    """The tools a client sent inside ``namespace`` tools, by the name the model calls
    (``<namespace>__<name>``): a call of one goes back as ``name`` + ``namespace``."""
    return {
        f"{tool['namespace']}__{tool['name']}": (tool["namespace"], tool["name"])
        for tool in tools or []
        if tool.get("namespace")
    }


def function_call_item(
    call: ClientCall,
    status: str = "completed",
    spaces: dict[str, tuple[str, str]] | None = None,
) -> dict[str, Any]:
    found = (spaces or {}).get(call.name)
    return {
        "type": "function_call",
        "id": "fc_" + call.call_id,
        "call_id": call.call_id,
        "name": found[1] if found else call.name,
        **({"namespace": found[0]} if found else {}),
        "arguments": call.arguments if status == "completed" else "",
        "status": status,
    }


def message_item(msg: Msg) -> dict[str, Any]:
    """A stored message as a conversation / input item (a client tool's output as its
    ``function_call_output``)."""
    if msg.role is MsgRole.TOOL:
        return {
            "type": "function_call_output",
            "id": item_id(msg.id),
            "call_id": msg.tool_call_id,
            "output": msg.content,
            "status": "completed",
        }
    role = msg.role.value.lower()
    if msg.role is MsgRole.ASSISTANT:
        content = [output_text(msg.content)]
    else:
        said = [{"type": "input_text", "text": msg.content}] if msg.content or not msg.files else []
        content = [*said, *map(_file_part, msg.files)]
    return {
        "type": "message",
        "id": item_id(msg.id),
        "status": "completed",
        "role": role,
        "content": content,
    }


def _file_part(entry: dict[str, Any]) -> dict[str, Any]:
    """A question's stored file as the part that names it (by the file's id)."""
    if entry.get("type") in RASTER_IMAGES:
        return {"type": "input_image", "file_id": entry.get("id"), "detail": "auto"}
    return {"type": "input_file", "file_id": entry.get("id"), "filename": entry.get("name")}


def item_list(msgs: list[Msg], has_more: bool = False) -> dict[str, Any]:
    """Messages as an OpenAI list of items."""
    data = [message_item(msg) for msg in msgs]
    return {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": has_more,
    }


def answer_item(message_id: int | None, text: str, status: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id(message_id),
        "status": _ITEM_STATUS.get(status, "incomplete"),
        "role": "assistant",
        "content": [output_text(text)] if status != "in_progress" else [],
    }


def reasoning_id(message_item_id: str) -> str:
    return "rs_" + message_item_id.removeprefix("msg_")


def summary_text(text: str) -> dict[str, Any]:
    return {"type": "summary_text", "text": text}


def reasoning_item(message_item_id: str, text: str) -> dict[str, Any]:
    """The model's thoughts before its answer, as a ``reasoning`` item's summary."""
    return {
        "type": "reasoning",
        "id": reasoning_id(message_item_id),
        "summary": [summary_text(text)] if text else [],
    }


def output_items(
    view: ResponseView, status: str, spaces: dict[str, tuple[str, str]] | None = None
) -> list[dict[str, Any]]:
    """An ended response's output: its reasoning (if the model thought aloud), its
    answer, the calls of the client's tools it made."""
    answer = answer_item(view.message_id, view.content, status)
    thought = [reasoning_item(answer["id"], view.reasoning)] if view.reasoning else []
    return [*thought, answer, *(function_call_item(call, spaces=spaces) for call in view.calls)]


def compaction_item(handle: str) -> dict[str, Any]:
    """What compacting a conversation answers: its ``encrypted_content`` is Lumina's handle
    to the conversation (``services.responses.compaction_handle``)."""
    return {"type": "compaction", "id": "cmp_" + secrets.token_hex(12), "encrypted_content": handle}


def usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def response_object(
    view: ResponseView,
    *,
    instructions: str | None = None,
    store: bool = True,
    tools: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The response as Open Responses' ``ResponseResource``: its answer, then the calls
    of the client's tools it made; Lumina's conversation is in ``conversation`` and
    ``metadata.lumina_conversation_id``."""
    status = _STATUS.get(view.status, "completed")
    running = status == "in_progress"
    error = None
    if status == "failed":
        error = {"code": "server_error", "message": view.error or "the model failed"}
    return {
        "id": view.id,
        "object": "response",
        "created_at": _seconds(view.created_at) or 0,
        "completed_at": None if running else _seconds(view.completed_at),
        "status": status,
        "incomplete_details": {"reason": "interrupted"} if status == "incomplete" else None,
        "model": view.agent_id,
        "previous_response_id": view.previous_response_id,
        "instructions": instructions,
        "output": [] if running else output_items(view, status, namespaced(tools)),
        "error": error,
        "tools": tools or [],
        "tool_choice": "auto",
        "truncation": "disabled",
        "parallel_tool_calls": False,
        "text": {"format": {"type": "text"}},
        "top_p": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "top_logprobs": 0,
        "temperature": 1.0,
        "reasoning": None,
        "usage": None if running else usage(view.input_tokens, view.output_tokens),
        "max_output_tokens": None,
        "max_tool_calls": None,
        "store": store,
        "background": False,
        "service_tier": "default",
        "metadata": {"lumina_conversation_id": view.conversation_uuid},
        "safety_identifier": None,
        "prompt_cache_key": None,
        "conversation": {"id": conversation_id(view.conversation_uuid)},
    }


class ResponseFramer:
    """The framer of one streamed response: ``response`` is the in-progress object,
    ``message_id`` its answer's row, ``finish`` the final object of a run's result. The
    calls of the client's tools are those the run marks ``by_client``. The output items
    stream in the order the final object lists them: the model's reasoning (its thoughts
    before the answer, as a ``reasoning`` item's summary), the answer (a ``message``,
    opened at its first text), then each call of a client's tool (a ``function_call``).
    Every event carries its ``type`` and the next ``sequence_number``."""

    def __init__(
        self,
        response: dict[str, Any],
        message_id: int | None,
        finish: Callable[[RunFinished], dict[str, Any]],
    ) -> None:
        self.response = response
        self.spaces = namespaced(response.get("tools"))
        self.finish = finish
        self.item = answer_item(message_id, "", "in_progress")
        self.seq = 0
        self.items = 0  # output items opened so far
        self.text = ""
        self.message: int | None = None  # the answer's output index, once opened
        self.closed = False
        self.thought = ""
        self.reasoning: int | None = None  # the reasoning item's output index
        self.thinking = False  # its summary still streaming

    def __call__(self, run_event: RunEvent) -> bytes | None:
        payload = run_event.payload
        out = self._started() if self.seq == 0 else b""  # the run's first event, whatever
        if isinstance(payload, ThinkingChunk) and self.message is None:
            return out + self._thought(payload.text)
        if isinstance(payload, AnswerChunk) and not self.closed:
            return out + self._answered(payload.text)
        if isinstance(payload, ToolCallRequested) and payload.by_client:
            return out + self.called(ClientCall(payload.call_id, payload.name, payload.arguments))
        if isinstance(payload, RunFinished):
            return out + self.ended(self.finish(payload))
        return out or None

    def replay(self, final: dict[str, Any]) -> bytes:
        """A finished response's events again (a retried request's, by Idempotency-Key):
        each item's text in one delta."""
        out = self._started()
        for item in final["output"]:
            if item["type"] == "reasoning" and item["summary"]:
                out += self._thought(item["summary"][0]["text"])
            elif item["type"] == "message" and item["content"] and item["content"][0]["text"]:
                out += self._answered(item["content"][0]["text"])
            elif item["type"] == "function_call":
                name = item["name"]
                if item.get("namespace"):
                    name = f"{item['namespace']}__{name}"
                out += self.called(ClientCall(item["call_id"], name, item["arguments"]))
            elif item["type"] == "compaction":
                out += self._whole(item)
        return out + self.ended(final)

    def _whole(self, item: dict[str, Any]) -> bytes:
        """An item that has no parts to stream: added, then done."""
        index = self._next()
        return self._event(
            "response.output_item.added", output_index=index, item=item
        ) + self._event("response.output_item.done", output_index=index, item=item)

    def called(self, call: ClientCall) -> bytes:
        """A call of the client's tool: the answer so far is done, the call follows it."""
        out = self._open_message()
        if not self.closed:
            done = {**self.item, "status": "completed", "content": [output_text(self.text)]}
            out += self._closed(self.text, done)
        index = self._next()
        on = {"item_id": "fc_" + call.call_id, "output_index": index}
        opening = function_call_item(call, "in_progress", self.spaces)
        return (
            out
            + self._event("response.output_item.added", output_index=index, item=opening)
            + self._event("response.function_call_arguments.delta", **on, delta=call.arguments)
            + self._event("response.function_call_arguments.done", **on, arguments=call.arguments)
            + self._event(
                "response.output_item.done",
                output_index=index,
                item=function_call_item(call, spaces=self.spaces),
            )
        )

    def ended(self, final: dict[str, Any]) -> bytes:
        final = self._as_streamed(final)
        answers = [item for item in final["output"] if item["type"] == "message"]
        answer = answers[0] if answers else self.item
        text = answer["content"][0]["text"] if answer["content"] else ""
        kind = "response.completed"
        if final["status"] == "failed":
            kind = "response.failed"
        elif final["status"] in ("incomplete", "cancelled"):
            kind = "response.incomplete"
        if not answers and self.message is None:  # no answer at all (a compaction)
            return self._event(kind, response=final)
        out = self._open_message()
        if not self.closed:
            out += self._closed(text, answer)
        return out + self._event(kind, response=final)

    def _as_streamed(self, final: dict[str, Any]) -> dict[str, Any]:
        """``final`` with its answer (and reasoning) under the ids they streamed as: after
        the agent's own tool steps the answer's text is in a later row than the one the
        stream opened, and a client checks that an item keeps its id."""
        ids = {"message": self.item["id"], "reasoning": reasoning_id(self.item["id"])}
        output = [
            {**item, "id": ids[item["type"]]} if item["type"] in ids else item
            for item in final["output"]
        ]
        return {**final, "output": output}

    def _thought(self, text: str) -> bytes:
        out = b""
        if self.reasoning is None:
            self.reasoning, self.thinking = self._next(), True
            out = self._event(
                "response.output_item.added",
                output_index=self.reasoning,
                item=reasoning_item(self.item["id"], ""),
            ) + self._event(
                "response.reasoning_summary_part.added", **self._summary(), part=summary_text("")
            )
        self.thought += text
        return out + self._event(
            "response.reasoning_summary_text.delta", **self._summary(), delta=text
        )

    def _answered(self, text: str) -> bytes:
        out = self._open_message()
        self.text += text
        delta = self._event("response.output_text.delta", **self._part(), delta=text, logprobs=[])
        return out + delta

    def _open_message(self) -> bytes:
        if self.message is not None:
            return b""
        out = b""
        if self.thinking:  # the thoughts end where the answer starts
            self.thinking = False
            done = reasoning_item(self.item["id"], self.thought)
            out = (
                self._event(
                    "response.reasoning_summary_text.done", **self._summary(), text=self.thought
                )
                + self._event(
                    "response.reasoning_summary_part.done",
                    **self._summary(),
                    part=summary_text(self.thought),
                )
                + self._event("response.output_item.done", output_index=self.reasoning, item=done)
            )
        self.message = self._next()
        return (
            out
            + self._event("response.output_item.added", output_index=self.message, item=self.item)
            + self._event("response.content_part.added", **self._part(), part=output_text(""))
        )

    def _next(self) -> int:
        self.items += 1
        return self.items - 1

    def _part(self) -> dict[str, Any]:
        return {"item_id": self.item["id"], "output_index": self.message, "content_index": 0}

    def _summary(self) -> dict[str, Any]:
        return {
            "item_id": reasoning_id(self.item["id"]),
            "output_index": self.reasoning,
            "summary_index": 0,
        }

    def _event(self, kind: str, **fields: Any) -> bytes:
        body = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return frame(body, event=kind)

    def _started(self) -> bytes:
        return self._event("response.created", response=self.response) + self._event(
            "response.in_progress", response=self.response
        )

    def _closed(self, text: str, done_item: dict[str, Any]) -> bytes:
        self.closed = True
        return (
            self._event("response.output_text.done", **self._part(), text=text, logprobs=[])
            + self._event("response.content_part.done", **self._part(), part=output_text(text))
            + self._event("response.output_item.done", output_index=self.message, item=done_item)
        )
