"""How every SSE route that starts a run answers (:func:`stream_run`): start it, open its
events, stream them framed for its family. The v1 execute/stream and regenerate, the
per-agent chat, chat completions and the Responses API all go through here; the routes
that start a run from a person's message (execute/stream, regenerate, edit, the per-agent
chat) answer it through one block, :meth:`Once.answer`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from lumina_app.api.auth import Caller
from lumina_app.api.deps import IdempotencyDep, RunsDep, SettingsDep, stream_response
from lumina_app.api.idempotency import idempotent, idempotent_run
from lumina_app.api.schemas import SyncResult
from lumina_app.api.sse import EventStream, Framer, v1_frames
from lumina_app.api.stream_slots import StreamSlot, StreamSlotDep
from lumina_app.composition import IdempotencyStore
from lumina_app.domain import Principal
from lumina_app.services.runs import ActiveRun, RunService
from lumina_app.settings import Settings


@dataclass(frozen=True, slots=True)
class Started:
    """A run a stream route started (or found again: a retry with its Idempotency-Key):
    the stream resumes after event ``after`` (a reconnect's Last-Event-ID), framed by
    ``framer``, with ``headers`` added to the SSE ones."""

    run_id: str
    framer: Framer
    after: int = 0
    headers: Mapping[str, str] = field(default_factory=dict)


async def stream_run(
    runs: RunService,
    settings: Settings,
    caller: Principal,
    slot: StreamSlot,
    starting: Awaitable[Started],
) -> EventStream:
    """The SSE response of the run ``starting`` starts. The owner's stream slot goes back
    when the stream is over, or at once if starting the run or opening its events fails."""
    try:
        started = await starting
        events = await runs.events(caller, started.run_id, after=started.after)
    except BaseException:
        slot.release()
        raise
    stream = stream_response(settings, events, started.framer, slot.release)
    stream.raw_headers.extend(
        (name.lower().encode(), value.encode()) for name, value in started.headers.items()
    )
    return stream


@dataclass(frozen=True, slots=True)
class Answering:
    """What :meth:`Once.answer` needs of the request, as one route dependency (resolved in
    this order: the caller's stream slot is taken last, as when each was the route's own)."""

    runs: RunService
    idempotency: IdempotencyStore
    settings: Settings
    caller: Principal
    slot: StreamSlot


async def _answering(
    runs: RunsDep,
    idempotency: IdempotencyDep,
    settings: SettingsDep,
    caller: Caller,
    slot: StreamSlotDep,
) -> Answering:
    return Answering(runs, idempotency, settings, caller, slot)


AnsweringDep = Annotated[Answering, Depends(_answering)]


@dataclass(frozen=True, slots=True)
class Once:
    """A run started at most once per Idempotency-Key (``key`` None: every time); a retry
    of the request that started it gets its stream after ``last_event_id``."""

    key: str | None
    scope: str
    request: BaseModel | dict[str, Any]
    last_event_id: int = 0

    async def start_run(
        self,
        runs: RunService,
        idempotency: IdempotencyStore,
        caller: Principal,
        begin: Callable[[], Awaitable[str]],
        framer: Framer,
    ) -> Started:
        """``begin`` (it returns the run id) unless this request's key already did."""
        run_id, retry = await idempotent_run(
            idempotency, runs, caller.owner, self.key, self.scope, self.request, begin
        )
        return Started(run_id, framer, after=self.last_event_id if retry else 0)

    async def answer(
        self,
        asked: Answering,
        begin: Callable[[], Awaitable[ActiveRun]],
        *,
        framer: Framer = v1_frames,
        stream: bool = True,
    ) -> Response:
        """The run ``begin`` starts, answered as its SSE stream (a retry with this key
        resumes after its Last-Event-ID) or, ``stream`` false, as the finished run's JSON
        (a retry gets the same JSON): the block every route that starts a run shares."""
        runs, caller = asked.runs, asked.caller
        if not stream:
            asked.slot.release()  # nothing streams

            async def finished() -> dict[str, Any]:
                return SyncResult.of(await runs.result(await begin())).model_dump()

            key, scope, request = self.key, self.scope, self.request
            return JSONResponse(
                await idempotent(asked.idempotency, caller.owner, key, scope, request, finished)
            )

        async def run_id() -> str:
            return (await begin()).run_id

        started = self.start_run(runs, asked.idempotency, caller, run_id, framer)
        return await stream_run(runs, asked.settings, caller, asked.slot, started)
