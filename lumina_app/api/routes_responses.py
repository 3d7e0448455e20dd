"""The Responses API: ``POST /v1/responses`` (JSON or SSE), ``GET``, ``POST …/cancel`` and
``GET …/input_items`` of a stored response, with Lumina's memory behind them
(services/responses.py). ``model`` is the agent id; a stored response is a run.

Same keys, owner scoping, stream slots and one-active-run 409 as the chat gateway; errors
in OpenAI's shape (``openai_errors.py``)."""

from __future__ import annotations

import secrets
import time
from typing import Annotated, Any

from fastapi import Header, Path, Response
from fastapi.responses import JSONResponse

from lumina_app.api.auth import Caller
from lumina_app.api.deps import (
    IdempotencyDep,
    ResponsesDep,
    RunsDep,
    SettingsDep,
    StreamsDep,
)
from lumina_app.api.idempotency import IdempotencyKey, idempotent
from lumina_app.api.openai_errors import openai_router
from lumina_app.api.responses_wire import (
    ResponseFramer,
    compaction_item,
    item_list,
    response_object,
    usage,
)
from lumina_app.api.run_stream import Started, stream_run
from lumina_app.api.schemas import stream_responses
from lumina_app.api.schemas_responses import (
    CompactRequest,
    CreateResponse,
    ImagePart,
    inline_files,
)
from lumina_app.composition import IdempotencyStore
from lumina_app.domain import Principal, RequestInProgress, RunFinished, RunStatus, utcnow
from lumina_app.domain.tokens import estimate_text
from lumina_app.services.openai_gateway import GatewayRun
from lumina_app.services.responses import (
    ResponsesService,
    ResponseTurn,
    ResponseView,
    compacted_conversation,
    response_id,
    run_id_of,
)

router = openai_router()
ResponseId = Annotated[str, Path(max_length=128)]
CONVERSATION_HEADER = "X-Lumina-Conversation-Id"
# Codex's id for its session: finds the conversation when the request names none.
SessionHeader = Annotated[str | None, Header(alias="session-id", max_length=256)]


@router.post(
    "/responses",
    responses=stream_responses("a response, or its events", openai=True),
)
async def create_response(
    body: CreateResponse,
    responses: ResponsesDep,
    runs: RunsDep,
    idempotency: IdempotencyDep,
    settings: SettingsDep,
    streams: StreamsDep,
    caller: Caller,
    session_id: SessionHeader = None,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """A turn: ``input`` is what is new when ``previous_response_id`` or ``conversation``
    names the conversation; else the input is matched against stored conversations.
    A retry with the same ``Idempotency-Key`` starts nothing: it gets the first response
    (streamed again once it has ended)."""
    tools = body.function_tools()
    parts, image_count = body.attachments()
    turn = ResponseTurn(
        body.model,
        body.lines(),
        body.previous_response_id,
        body.conversation_id(),
        session_key=body.prompt_cache_key or session_id,
        outputs=tuple(body.outputs()),
        tools=tuple(tools),
        compaction=body.compaction(),
        images=tuple(p.chat_part() for p in parts if isinstance(p, ImagePart) and p.linked),
        image_count=image_count,
        files=inline_files(parts),
    )
    shown = {
        "instructions": body.instructions,
        "store": body.store is not False,
        "tools": body.shown_tools(),
    }
    fingerprint = {"body": body.model_dump(mode="json"), "session": session_id}
    if body.compaction_trigger():
        return await _compacted(responses, caller, turn, shown, bool(body.stream))
    if not body.stream:

        async def complete() -> dict[str, Any]:
            started = await responses.start_response(caller, turn)
            result = await runs.result(started.run)
            view = ResponsesService.finished(started, result, body.previous_response_id)
            return response_object(view, **shown)

        done = await idempotent(
            idempotency, caller.owner, idempotency_key, "response", fingerprint, complete
        )
        conversation = done["metadata"]["lumina_conversation_id"]
        return JSONResponse(done, headers={CONVERSATION_HEADER: conversation})
    slot = await streams.take(caller.owner)
    opened = _opened(
        responses, idempotency, caller, turn, body, shown, idempotency_key, fingerprint
    )
    try:
        return await stream_run(runs, settings, caller, slot, opened)
    except _Retried as retried:
        return _replayed(retried.view, shown)


class _Retried(Exception):
    """A retry of a streamed request whose Idempotency-Key started a response already:
    that response is answered again (once it has ended), nothing new is started."""

    def __init__(self, view: ResponseView) -> None:
        super().__init__(view.id)
        self.view = view


async def _opened(
    responses: ResponsesService,
    idempotency: IdempotencyStore,
    caller: Principal,
    turn: ResponseTurn,
    body: CreateResponse,
    shown: dict[str, Any],
    idempotency_key: str | None,
    fingerprint: dict[str, Any],
) -> Started:
    """The response this request starts, framed as the Responses API's events."""
    first: list[GatewayRun] = []

    async def start_response() -> dict[str, Any]:
        first.append(await responses.start_response(caller, turn))
        # The conversation too: deleting it deletes this record (storage/sql/idempotency.py).
        return {"id": response_id(first[0].run.run_id), "conversation": first[0].conversation_uuid}

    accepted = await idempotent(
        idempotency, caller.owner, idempotency_key, "response-stream", fingerprint, start_response
    )
    if not first:
        raise _Retried(await responses.get(caller, accepted["id"]))
    started = first[0]
    record = started.run.record
    opening = ResponseView(
        run_id=started.run.run_id,
        conversation_uuid=started.conversation_uuid,
        agent_id=record.agent_id,
        status=RunStatus.RUNNING,
        message_id=started.run.assistant.id,
        created_at=record.started_at,
        previous_response_id=body.previous_response_id,
    )

    def finish(result: RunFinished) -> dict[str, Any]:
        view = ResponsesService.finished(started, result, body.previous_response_id)
        return response_object(view, **shown)

    framer = ResponseFramer(response_object(opening, **shown), opening.message_id, finish)
    headers = {CONVERSATION_HEADER: started.conversation_uuid}
    return Started(started.run.run_id, framer, headers=headers)


@router.post("/responses/compact")
async def compact_response(
    body: CompactRequest,
    responses: ResponsesDep,
    caller: Caller,
    session_id: SessionHeader = None,
) -> dict[str, Any]:
    """The conversation so far as a ``compaction`` item (after the input's user messages,
    as OpenAI answers): its ``encrypted_content`` is a handle to the Lumina conversation,
    whose memory (summary, window, recall) holds what was compacted. A later input carrying
    the item goes on with that conversation."""
    turn = ResponseTurn(
        body.model,
        body.lines(),
        body.previous_response_id,
        session_key=body.prompt_cache_key or session_id,
        compaction=body.compaction(),
    )
    handle = await responses.compact(caller, turn)
    users = [line for line in turn.lines if line.role == "user"]
    output: list[dict[str, Any]] = [
        {
            "type": "message",
            "id": "msg_c" + secrets.token_hex(8),
            "status": "completed",
            "role": "user",
            "content": [{"type": "input_text", "text": line.text}],
        }
        for line in users
    ]
    output.append(compaction_item(handle))
    return {
        "id": "resp_cmp_" + secrets.token_hex(12),
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": output,
        "usage": usage(_input_tokens(turn), 0),
    }


def _input_tokens(turn: ResponseTurn) -> int:
    return sum(estimate_text(line.text) for line in turn.lines)


async def _compacted(
    responses: ResponsesService,
    caller: Principal,
    turn: ResponseTurn,
    shown: dict[str, Any],
    stream: bool,
) -> Response:
    """A response to an input ending with Codex's ``compaction_trigger``: no run, its
    output the ``compaction`` item ``/v1/responses/compact`` answers (not stored: a GET of
    its id is a 404), as JSON or as a stream of that one item."""
    handle = await responses.compact(caller, turn)
    now = utcnow()
    view = ResponseView(
        run_id="cmp_" + secrets.token_hex(12),
        conversation_uuid=compacted_conversation(handle),
        agent_id=turn.agent_id,
        status=RunStatus.COMPLETE,
        created_at=now,
        completed_at=now,
        input_tokens=_input_tokens(turn),
        previous_response_id=turn.previous_response_id,
    )
    final = {**response_object(view, **shown), "output": [compaction_item(handle)]}
    if stream:
        return _replay_stream(final, None, view.conversation_uuid)
    return JSONResponse(final, headers={CONVERSATION_HEADER: view.conversation_uuid})


def _replayed(view: ResponseView, shown: dict[str, Any]) -> Response:
    if view.status is RunStatus.RUNNING:
        raise RequestInProgress(
            f"the response of this Idempotency-Key is still streaming: GET /v1/responses/{view.id}"
        )
    final = response_object(view, **shown)
    return _replay_stream(final, view.message_id, view.conversation_uuid)


def _replay_stream(final: dict[str, Any], message_id: int | None, conversation: str) -> Response:
    """An ended response's events, from its final object."""
    opening = {**final, "status": "in_progress", "output": [], "usage": None}
    framer = ResponseFramer({**opening, "completed_at": None}, message_id, lambda _ended: final)
    headers = {CONVERSATION_HEADER: conversation}
    return Response(framer.replay(final), media_type="text/event-stream", headers=headers)


@router.get("/responses/{response_id}")
async def get_response(
    response_id: ResponseId, responses: ResponsesDep, caller: Caller
) -> dict[str, Any]:
    """A stored response: the run's answer as it is now."""
    return response_object(await responses.get(caller, response_id))


@router.delete("/responses/{response_id}")
async def delete_response(
    response_id: ResponseId, responses: ResponsesDep, idempotency: IdempotencyDep, caller: Caller
) -> dict[str, Any]:
    """Forget a stored response; the messages it wrote stay in its conversation (delete
    the conversation to remove them). A running one is a 409: cancel it first. An
    ``Idempotency-Key`` that made it is free again: a retry is a new request."""
    await responses.delete(caller, response_id)
    await idempotency.run_deleted(caller.owner, run_id_of(response_id))
    return {"id": response_id, "object": "response", "deleted": True}


@router.post("/responses/{response_id}/cancel")
async def cancel_response(
    response_id: ResponseId, responses: ResponsesDep, caller: Caller
) -> dict[str, Any]:
    """Stop a running response; its answer so far is kept (``cancelled``)."""
    return response_object(await responses.cancel(caller, response_id))


@router.get("/responses/{response_id}/input_items")
async def response_input_items(
    response_id: ResponseId, responses: ResponsesDep, caller: Caller
) -> dict[str, Any]:
    """What the response was asked."""
    return item_list(await responses.input_items(caller, response_id))
