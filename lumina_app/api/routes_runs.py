"""Runs: status and result, resumable event stream (Last-Event-ID), stop."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from lumina_app.api.auth import AuthenticatedRoute, Caller
from lumina_app.api.deps import LastEventId, PermissionsDep, RunsDep, SettingsDep, stream_response
from lumina_app.api.schemas import RunContextOut, RunOut, error_responses, stream_responses
from lumina_app.api.sse import named_frames, v1_frames
from lumina_app.api.stream_slots import StreamSlotDep

router = APIRouter(prefix="/api/v1/runs", tags=["runs"], route_class=AuthenticatedRoute)


@router.get("/{run_id}", response_model=RunOut)
async def get_run(run_id: str, runs: RunsDep, caller: Caller) -> RunOut:
    return RunOut.of(await runs.status(caller, run_id))


@router.get(
    "/{run_id}/stream",
    response_class=Response,
    responses=stream_responses("missed events, then live"),
)
async def resume_stream(
    run_id: str,
    runs: RunsDep,
    settings: SettingsDep,
    caller: Caller,
    slot: StreamSlotDep,
    after: LastEventId,
    format: Annotated[Literal["agent", "v1"], Query()] = "agent",
) -> Response:
    """Reconnect with ``Last-Event-ID``: what was missed, then the live rest; no gap, no
    duplicate. ``format=v1`` frames it like execute/stream, ``agent`` like /chat."""
    events = await runs.events(caller, run_id, after=after)
    framer = v1_frames if format == "v1" else named_frames
    return stream_response(settings, events, framer, slot.release)


@router.get("/{run_id}/context", response_model=RunContextOut)
async def run_context(run_id: str, runs: RunsDep, caller: Caller) -> RunContextOut:
    """Exactly the message list the run's model was sent (roles, contents), with what it
    was made of: the system prompt version, the summary, the window, the trimmed count."""
    return RunContextOut.of(await runs.context(caller, run_id))


@router.post("/{run_id}/stop", response_model=RunOut)
async def stop_run(run_id: str, runs: RunsDep, caller: Caller) -> RunOut:
    """Stop a live run (its answer ends ``stopped`` with the text so far). Stopping a run
    that already ended answers with its final state."""
    return RunOut.of(await runs.stop(caller, run_id))


class PermissionAnswerIn(BaseModel):
    """The person's choice: one of the request's ``options[].optionId``, or null to cancel."""

    model_config = ConfigDict(extra="forbid")
    optionId: str | None = Field(max_length=200)


class PermissionAnswerOut(BaseModel):
    runId: str
    requestId: str
    optionId: str | None


@router.post(
    "/{run_id}/permissions/{request_id}",
    response_model=PermissionAnswerOut,
    responses=error_responses(404, 422),
)
async def answer_permission(
    run_id: str,
    request_id: str,
    body: PermissionAnswerIn,
    permissions: PermissionsDep,
    caller: Caller,
) -> PermissionAnswerOut:
    """Answer an ``acp`` agent's permission request (policy ``ask``): the run shows it as
    a ``tool_call`` named ``permission: …`` whose arguments carry ``requestId`` and the
    options, and waits for this (then rejects after LUMINA_ACP_PERMISSION_TIMEOUT_SECONDS)."""
    permissions.answer(caller, run_id, request_id, body.optionId)
    return PermissionAnswerOut(runId=run_id, requestId=request_id, optionId=body.optionId)
