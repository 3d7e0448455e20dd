"""Runs: status and result, resumable event stream (Last-Event-ID), stop."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from lumina_app.api.auth import AuthenticatedRoute, Owner
from lumina_app.api.deps import LastEventId, ServicesDep, stream_response
from lumina_app.api.schemas import RunOut, error_responses
from lumina_app.api.sse import named_frames, v1_frames
from lumina_app.api.stream_slots import StreamSlotDep
from lumina_app.composition import Services
from lumina_app.domain import RunNotFound
from lumina_app.domain.views import iso_us

router = APIRouter(prefix="/api/v1/runs", tags=["runs"], route_class=AuthenticatedRoute)


async def _run_out(services: Services, run_id: str, owner: str) -> RunOut:
    active = services.chat.active_run(run_id, owner=owner)
    if active is not None:
        record, conversation = active.record, active.conversation.uuid
        return RunOut(
            runId=run_id,
            conversationId=conversation,
            agentId=record.agent_id,
            status="running",
            scenario=record.scenario,
            model=record.model,
            messageId=record.assistant_message_id,
            turnId=active.assistant.turn_id,
            startedAt=iso_us(record.started_at) if record.started_at else None,
        )
    record = await services.chat.runs.get_run(run_id, owner=owner)
    if record is None:
        raise RunNotFound(run_id)
    answer = (
        await services.memory.get_message(record.assistant_message_id)
        if record.assistant_message_id
        else None
    )
    conversation = await services.memory.conversation_uuid(record.conversation_id)
    return RunOut(
        runId=run_id,
        conversationId=conversation or "",
        agentId=record.agent_id,
        status=record.status,
        scenario=record.scenario,
        model=record.model,
        messageId=record.assistant_message_id,
        turnId=answer.turn_id if answer else None,
        content=answer.content if answer else None,
        error=record.error,
        startedAt=iso_us(record.started_at) if record.started_at else None,
        finishedAt=iso_us(record.finished_at) if record.finished_at else None,
    )


RUN_ID = re.compile(r"run-[0-9a-f]{16}")


def _valid_run_id(run_id: str) -> str:
    """Anything but the engine's own ``run-<16 hex>`` shape is not found, without a query."""
    if not RUN_ID.fullmatch(run_id):
        raise RunNotFound(run_id)
    return run_id


@router.get("/{run_id}", response_model=RunOut)
async def get_run(run_id: str, services: ServicesDep, owner: Owner) -> RunOut:
    return await _run_out(services, _valid_run_id(run_id), owner)


@router.get(
    "/{run_id}/stream",
    response_class=Response,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "missed events, then live"},
        **error_responses(429),
    },
)
async def resume_stream(
    run_id: str,
    services: ServicesDep,
    owner: Owner,
    slot: StreamSlotDep,
    after: LastEventId,
    format: Annotated[Literal["agent", "v1"], Query()] = "agent",
) -> Response:
    """Reconnect with ``Last-Event-ID``: what was missed, then the live rest; no gap, no
    duplicate. ``format=v1`` frames it like execute/stream, ``agent`` like /chat."""
    events = await services.chat.open_stream(_valid_run_id(run_id), after=after, owner=owner)
    framer = v1_frames if format == "v1" else named_frames
    return stream_response(services, events, framer, slot)


@router.post("/{run_id}/stop", response_model=RunOut)
async def stop_run(run_id: str, services: ServicesDep, owner: Owner) -> RunOut:
    """Stop a live run (its answer ends ``stopped`` with the text so far). Stopping a run
    that already ended answers with its final state."""
    await services.chat.stop(_valid_run_id(run_id), owner=owner)
    return await _run_out(services, run_id, owner)
