"""The OpenAI-compatible gateway: ``GET /v1/models`` (agents as models) and
``POST /v1/chat/completions`` (``model`` = agent id), streamed or not, in the wire format the
`openai` SDK parses, with Lumina's memory behind it (services/openai_gateway.py).

Same keys, owner scoping, limits, one-active-run 409 and ``Idempotency-Key`` as the other
routes; errors in OpenAI's shape (``openai_errors.py``). Every answer names its conversation
in ``X-Lumina-Conversation-Id``, to send back for the next turn."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Header, Response
from fastapi.responses import JSONResponse

from lumina_app.api.auth import Caller
from lumina_app.api.deps import GatewayDep, IdempotencyDep, RunsDep, SettingsDep, StreamsDep
from lumina_app.api.idempotency import IdempotencyKey, idempotent
from lumina_app.api.openai_errors import OpenAIRoute, openai_error
from lumina_app.api.run_stream import Started, stream_run
from lumina_app.api.schemas import stream_responses
from lumina_app.api.schemas_openai import (
    ChatCompletion,
    ChatCompletionRequest,
    Model,
    ModelList,
)
from lumina_app.api.sse import frame
from lumina_app.domain import (
    AnswerChunk,
    Principal,
    RunEvent,
    RunFailed,
    RunFinished,
    RunStatus,
    SessionStarted,
)
from lumina_app.domain.tokens import estimate_text
from lumina_app.observability import metrics
from lumina_app.services.gateway_files import image_from_data_url
from lumina_app.services.openai_gateway import ChatTurn, GatewayRun, OpenAIGateway

router = APIRouter(prefix="/v1", tags=["openai"], route_class=OpenAIRoute)
CONVERSATION_HEADER = "X-Lumina-Conversation-Id"
ConversationHeader = Annotated[str | None, Header(alias=CONVERSATION_HEADER, max_length=64)]
DONE = b"data: [DONE]\n\n"
_FINISH = {RunStatus.COMPLETE: "stop", RunStatus.STOPPED: "stop", RunStatus.INTERRUPTED: "stop"}


@router.get("/models", response_model=ModelList)
async def list_models(gateway: GatewayDep, _caller: Caller) -> ModelList:
    """The available agents, each as a model whose id is the agent id."""
    models = gateway.models()
    return ModelList(data=[Model(id=agent.id, created=created) for agent, created in models])


@router.post(
    "/chat/completions",
    response_model=ChatCompletion,
    responses=stream_responses("chat.completion, or chunks", openai=True),
)
async def chat_completions(
    body: ChatCompletionRequest,
    gateway: GatewayDep,
    runs: RunsDep,
    idempotency: IdempotencyDep,
    settings: SettingsDep,
    streams: StreamsDep,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
    conversation_id: ConversationHeader = None,
) -> Response:
    """A chat turn: the last user message is the new input; the conversation is the one
    named (header or ``metadata.conversation_id``) or the one the earlier messages match."""
    metadata = body.metadata or {}
    images = body.question_images()
    turn = ChatTurn(
        body.model,
        body.lines(),
        conversation_id or metadata.get("conversation_id"),
        files=tuple(
            image_from_data_url(part.image_url.url, "image_url", n)
            for n, part in enumerate(images, start=1)
            if part.inline
        ),
        linked_images=tuple(part.chat_part() for part in images if not part.inline),
    )
    request_print = {"body": body.model_dump(mode="json"), "conversation": turn.conversation_uuid}
    completion_id = "chatcmpl-" + secrets.token_hex(12)
    created = int(time.time())
    if not body.stream:
        done = await idempotent(
            idempotency,
            caller.owner,
            idempotency_key,
            "chat-completion",
            request_print,
            lambda: _complete(gateway, caller, turn, completion_id, created),
        )
        return _completion_response(done)
    slot = await streams.take(caller.owner)

    async def start_completion() -> dict[str, Any]:
        started = await gateway.start_completion(caller, turn)
        return {**_described(started), "id": completion_id, "created": created}

    async def stream() -> Started:
        accepted = await idempotent(
            idempotency,
            caller.owner,
            idempotency_key,
            "chat-completion-stream",
            request_print,
            start_completion,
        )
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        framer = _chunks(accepted, body.model, include_usage)
        return Started(accepted["runId"], framer, headers=_headers(accepted))

    return await stream_run(runs, settings, caller, slot, stream())


def _described(started: GatewayRun) -> dict[str, Any]:
    metrics.GATEWAY_REQUESTS.labels(started.found.value).inc()
    return {
        "runId": started.run.run_id,
        "conversationId": started.conversation_uuid,
        "systemPrompt": started.system_prompt.value,
        "promptTokens": started.run.record.context.get("tokens", 0),
    }


def _headers(described: dict[str, Any]) -> dict[str, str]:
    return {
        CONVERSATION_HEADER: described["conversationId"],
        "X-Lumina-Run-Id": described["runId"],
        "X-Lumina-System-Prompt": described["systemPrompt"],
    }


async def _complete(
    gateway: OpenAIGateway, caller: Principal, turn: ChatTurn, completion_id: str, created: int
) -> dict[str, Any]:
    started = await gateway.start_completion(caller, turn)
    await started.run.done.wait()
    result = started.run.result
    assert result is not None
    described = _described(started)
    if result.status is RunStatus.FAILED:
        return {**described, "failed": result.error or "the model failed"}
    completion = {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": turn.agent_id,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": result.content},
                "finish_reason": _FINISH.get(result.status, "stop"),
                "logprobs": None,
            }
        ],
        "usage": _usage(result, described["promptTokens"]),
    }
    return {**described, "completion": completion}


def _completion_response(done: dict[str, Any]) -> JSONResponse:
    if "failed" in done:
        response = openai_error(502, f"the agent's model failed: {done['failed']}", "run_failed")
    else:
        response = JSONResponse(done["completion"])
    response.headers.update(_headers(done))
    return response


def _usage(result: RunFinished, prompt_estimate: int) -> dict[str, int]:
    """The provider's counts when it sent them, else Lumina's estimate (domain/tokens.py)."""
    prompt = result.usage.get("promptTokens") or prompt_estimate
    completion = result.usage.get("completionTokens") or estimate_text(result.content)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _chunks(
    accepted: dict[str, Any], model: str, include_usage: bool
) -> Callable[[RunEvent], bytes | None]:
    """The framer of one stream: ``chat.completion.chunk`` frames, the finish chunk, the
    usage chunk if asked for, then ``data: [DONE]``; a failed run sends OpenAI's error frame
    (the SDK raises it) before ``[DONE]``."""
    base = {
        "id": accepted["id"],
        "object": "chat.completion.chunk",
        "created": accepted["created"],
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return frame({**base, "choices": [choice]})

    def framer(event: RunEvent) -> bytes | None:
        payload = event.payload
        if isinstance(payload, SessionStarted):
            return chunk({"role": "assistant", "content": ""})
        if isinstance(payload, AnswerChunk):
            return chunk({"content": payload.text})
        if isinstance(payload, RunFailed):
            error = {
                "message": payload.message,
                "type": "api_error",
                "param": None,
                "code": "run_failed",
            }
            return frame({"error": error})
        if isinstance(payload, RunFinished):
            out = b""
            if payload.status is not RunStatus.FAILED:
                out += chunk({}, _FINISH.get(payload.status, "stop"))
            if include_usage:
                usage = _usage(payload, accepted["promptTokens"])
                out += frame({**base, "choices": [], "usage": usage})
            return out + DONE
        return None

    return framer
