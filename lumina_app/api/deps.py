"""Shared route dependencies and lookups (services, conversations by id, stream responses)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Header, Query

from lumina_app.api.sse import EventStream, Framer
from lumina_app.archive.service import is_archive_conversation_id
from lumina_app.composition import Services, get_services
from lumina_app.domain import ConversationInfo, ConversationNotFound, RunEvent

if TYPE_CHECKING:
    from lumina_app.api.stream_slots import StreamSlot


async def services_dependency() -> Services:
    # Dependencies are async on purpose: FastAPI runs a plain ``def`` dependency in a
    # worker thread, a thread hop per request for what is an attribute read.
    return get_services()


ServicesDep = Annotated[Services, Depends(services_dependency)]


def is_conversation_id(value: str) -> bool:
    """A uuid, or a foreign id an archive import kept (``conv-mn3112l3``): anything else
    cannot name a conversation and is a 404 without touching the store."""
    if not isinstance(value, str):
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return is_archive_conversation_id(value)
    return True


async def find_conversation(
    services: Services, conversation_id: str, *, owner: str, agent_id: str | None = None
) -> ConversationInfo:
    """Someone else's conversation, another agent's, or a malformed id: all plain 404."""
    if not is_conversation_id(conversation_id):
        raise ConversationNotFound(conversation_id)
    return await services.memory.get_conversation(conversation_id, owner=owner, agent_id=agent_id)


def optional_conversation_id(conversation_id: str | None) -> str | None:
    if conversation_id in (None, ""):
        return None
    if not is_conversation_id(conversation_id):
        raise ConversationNotFound(conversation_id)
    return conversation_id


def stream_response(
    services: Services,
    events: AsyncIterator[RunEvent | None],
    framer: Framer,
    slot: StreamSlot,
) -> EventStream:
    """The SSE response; it gives the owner's stream ``slot`` back when it is over."""
    settings = services.settings
    return EventStream(
        events,
        framer,
        keepalive=settings.sse_keepalive_seconds,
        send_timeout=settings.sse_send_timeout_seconds,
        on_close=slot.release,
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
