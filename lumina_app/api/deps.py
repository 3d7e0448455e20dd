"""Shared route dependencies: the services, the Last-Event-ID, stream responses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Header, Query

from lumina_app.api.sse import EventStream, Framer
from lumina_app.composition import Services, current
from lumina_app.domain import RunEvent


async def services_dependency() -> Services:
    # Dependencies are async on purpose: FastAPI runs a plain ``def`` dependency in a
    # worker thread, a thread hop per request for what is an attribute read.
    return current()


ServicesDep = Annotated[Services, Depends(services_dependency)]


def stream_response(
    services: Services, events: AsyncIterator[RunEvent | None], framer: Framer
) -> EventStream:
    settings = services.settings
    return EventStream(
        events,
        framer,
        keepalive=settings.sse_keepalive_seconds,
        send_timeout=settings.sse_send_timeout_seconds,
    )


async def last_event_id(
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    last_event_id_query: Annotated[str | None, Query(alias="lastEventId")] = None,
) -> int:
    raw = last_event_id or last_event_id_query or "0"
    try:
        value = int(raw.strip())
    except ValueError:
        return 0
    return max(0, value)


LastEventId = Annotated[int, Depends(last_event_id)]
