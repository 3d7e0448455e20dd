"""The Responses API's wire shapes: a response object (Open Responses' ``ResponseResource``,
every field present), message and function-call items, and the framer that turns a run's
events into the streaming events ``response.created`` … ``response.completed``."""

from __future__ import annotations

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
    ToolCallRequested,
)
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


def function_call_item(call: ClientCall, status: str = "completed") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_" + call.call_id,
        "call_id": call.call_id,
        "name": call.name,
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
        content = [{"type": "input_text", "text": msg.content}]
    return {
        "type": "message",
        "id": item_id(msg.id),
        "status": "completed",
        "role": role,
        "content": content,
    }


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
        "output": []
        if running
        else [
            answer_item(view.message_id, view.content, status),
            *(function_call_item(call) for call in view.calls),
        ],
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


def stream_framer(
    response: dict[str, Any],
    message_id: int | None,
    finish: Callable[[RunFinished], dict[str, Any]],
    client_names: frozenset[str] = frozenset(),
) -> Callable[[RunEvent], bytes | None]:
    """The framer of one streamed response: ``response`` is the in-progress object,
    ``message_id`` its answer's row, ``finish`` the final object of a run's result,
    ``client_names`` the client's function tools (a call of one is a ``function_call``
    item, after the answer). Every event carries its ``type`` and the next
    ``sequence_number``."""
    item = answer_item(message_id, "", "in_progress")
    state = {"seq": 0, "text": "", "closed": False}
    calls: list[dict[str, Any]] = []  # the function_call items streamed, in order
    part = {"item_id": item["id"], "output_index": 0, "content_index": 0}

    def event(kind: str, **fields: Any) -> bytes:
        body = {"type": kind, "sequence_number": state["seq"], **fields}
        state["seq"] += 1
        return frame(body, event=kind)

    def opened() -> bytes:
        return (
            event("response.created", response=response)
            + event("response.in_progress", response=response)
            + event("response.output_item.added", output_index=0, item=item)
            + event("response.content_part.added", **part, part=output_text(""))
        )

    def closed(text: str, done_item: dict[str, Any]) -> bytes:
        state["closed"] = True
        return (
            event("response.output_text.done", **part, text=text, logprobs=[])
            + event("response.content_part.done", **part, part=output_text(text))
            + event("response.output_item.done", output_index=0, item=done_item)
        )

    def called(payload: ToolCallRequested) -> bytes:
        """A call of the client's tool: the answer so far is done, the call follows it."""
        out = b""
        if not state["closed"]:
            text = str(state["text"])
            out = closed(text, {**item, "status": "completed", "content": [output_text(text)]})
        call = ClientCall(payload.call_id, payload.name, payload.arguments)
        index = len(calls) + 1
        calls.append(function_call_item(call))
        on = {"item_id": "fc_" + call.call_id, "output_index": index}
        return (
            out
            + event(
                "response.output_item.added",
                output_index=index,
                item=function_call_item(call, "in_progress"),
            )
            + event("response.function_call_arguments.delta", **on, delta=call.arguments)
            + event("response.function_call_arguments.done", **on, arguments=call.arguments)
            + event("response.output_item.done", output_index=index, item=calls[-1])
        )

    def framer(run_event: RunEvent) -> bytes | None:
        payload = run_event.payload
        out = b""
        if state["seq"] == 0:  # the run's first event, whatever it is
            out = opened()
        if isinstance(payload, AnswerChunk) and not state["closed"]:
            state["text"] = str(state["text"]) + payload.text
            return out + event(
                "response.output_text.delta", **part, delta=payload.text, logprobs=[]
            )
        if isinstance(payload, ToolCallRequested) and payload.name in client_names:
            return out + called(payload)
        if isinstance(payload, RunFinished):
            final = finish(payload)
            answer = final["output"][0] if final["output"] else item
            text = answer["content"][0]["text"] if answer["content"] else ""
            kind = "response.completed"
            if final["status"] == "failed":
                kind = "response.failed"
            elif final["status"] in ("incomplete", "cancelled"):
                kind = "response.incomplete"
            if not state["closed"]:
                out += closed(text, answer)
            return out + event(kind, response=final)
        return out or None

    return framer
