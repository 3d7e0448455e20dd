"""Shared route dependencies: the services, the Last-Event-ID, stream responses."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Annotated

from fastapi import Depends, Header, Query

from lumina_app.api.schemas import SchemaNote
from lumina_app.api.sse import EventStream, Framer
from lumina_app.composition import Services, current
from lumina_app.domain import InvalidInput, RunEvent


async def services_dependency() -> Services:
    # Dependencies are async on purpose: FastAPI runs a plain ``def`` dependency in a
    # worker thread, a thread hop per request for what is an attribute read.
    return current()


ServicesDep = Annotated[Services, Depends(services_dependency)]


def stream_response(
    services: Services,
    events: AsyncIterator[RunEvent | None],
    framer: Framer,
    on_close: Callable[[], None],
) -> EventStream:
    """The SSE response; ``on_close`` runs when it is over (the owner's stream slot)."""
    settings = services.settings
    return EventStream(
        events,
        framer,
        keepalive=settings.sse_keepalive_seconds,
        send_timeout=settings.sse_send_timeout_seconds,
        on_close=on_close,
    )


# What the server sends as event ids: ASCII digits. Twenty of them pass any id a run can
# have (Redis stream ids stop at 2**64 - 1, 20 digits); ``int()`` would also read ``1_0``,
# ``+1``, `` 1`` or other scripts' digits, so it only sees what matched.
_EVENT_ID = re.compile(r"[0-9]{1,20}")
_EVENT_ID_NOTE = SchemaNote(pattern=r"^[0-9]{0,20}$")


async def last_event_id(
    last_event_id: Annotated[str, Header(alias="Last-Event-ID"), _EVENT_ID_NOTE] = "",
    last_event_id_query: Annotated[str, Query(alias="lastEventId"), _EVENT_ID_NOTE] = "",
) -> int:
    """The id of the last event a reconnecting client got; 0 (or empty) is none. Not
    nullable in the schema: a header has no null, only the text "null"."""
    for raw in (last_event_id, last_event_id_query):  # the header wins; both must be ids
        if raw and not _EVENT_ID.fullmatch(raw):
            raise InvalidInput("Last-Event-ID must be an event id: at most 20 ASCII digits")
    return int(last_event_id or last_event_id_query or 0)


LastEventId = Annotated[int, Depends(last_event_id)]
