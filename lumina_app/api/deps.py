"""Shared route dependencies: the services a route uses, the Last-Event-ID, stream
responses."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import Depends, Header, Query

from lumina_app.api.schemas import SchemaNote
from lumina_app.api.sse import EventStream, Framer
from lumina_app.composition import IdempotencyStore, Services, current
from lumina_app.domain import InvalidInput, RunEvent
from lumina_app.services.account_deletion import AccountDeletion
from lumina_app.services.account_export import AccountExport
from lumina_app.services.accounts import AccountService
from lumina_app.services.agent_permissions import AgentPermissions
from lumina_app.services.agents import AgentService
from lumina_app.services.conversations import ConversationService
from lumina_app.services.files import FileService
from lumina_app.services.health import HealthService
from lumina_app.services.imports import ImportService
from lumina_app.services.memories import MemoryService
from lumina_app.services.openai_conversations import OpenAIConversations
from lumina_app.services.openai_gateway import OpenAIGateway
from lumina_app.services.recall import RecallService
from lumina_app.services.responses import ResponsesService
from lumina_app.services.runs import RunService
from lumina_app.services.search import SearchService
from lumina_app.services.signin import SignInService
from lumina_app.services.stream_cap import StreamCap
from lumina_app.services.users import UserAdminService
from lumina_app.settings import Settings


async def services_dependency() -> Services:
    # Dependencies are async on purpose: FastAPI runs a plain ``def`` dependency in a
    # worker thread, a thread hop per request for what is an attribute read.
    return current()


def _part(name: str) -> Any:
    """The dependency on one service of :func:`services_dependency` (still the one place
    tests override). An optional one missing is the same AssertionError the routes raised."""

    async def part(services: Annotated[Services, Depends(services_dependency)]) -> Any:
        found = getattr(services, name)
        assert found is not None, name
        return found

    return part


SettingsDep = Annotated[Settings, Depends(_part("settings"))]
AgentsDep = Annotated[AgentService, Depends(_part("agents"))]
ConversationsDep = Annotated[ConversationService, Depends(_part("conversations"))]
RunsDep = Annotated[RunService, Depends(_part("runs"))]
HealthDep = Annotated[HealthService, Depends(_part("health"))]
SearchDep = Annotated[SearchService, Depends(_part("search"))]
RecallDep = Annotated[RecallService, Depends(_part("recall"))]
SignInDep = Annotated[SignInService, Depends(_part("signin"))]
AccountsDep = Annotated[AccountService, Depends(_part("accounts"))]
UsersDep = Annotated[UserAdminService, Depends(_part("users"))]
IdempotencyDep = Annotated[IdempotencyStore, Depends(_part("idempotency"))]
GatewayDep = Annotated[OpenAIGateway, Depends(_part("gateway"))]
ResponsesDep = Annotated[ResponsesService, Depends(_part("responses"))]
OpenAIConversationsDep = Annotated[OpenAIConversations, Depends(_part("openai_conversations"))]
StreamsDep = Annotated[StreamCap, Depends(_part("streams"))]
MemoriesDep = Annotated[MemoryService, Depends(_part("memories"))]
PermissionsDep = Annotated[AgentPermissions, Depends(_part("permissions"))]
DeletionDep = Annotated[AccountDeletion, Depends(_part("deletion"))]
AccountExportDep = Annotated[AccountExport, Depends(_part("account_export"))]
ImportsDep = Annotated[ImportService, Depends(_part("imports"))]
FilesDep = Annotated[FileService, Depends(_part("files"))]


def stream_response(
    settings: Settings,
    events: AsyncIterator[RunEvent | None],
    framer: Framer,
    on_close: Callable[[], None],
) -> EventStream:
    """The SSE response; ``on_close`` runs when it is over (the owner's stream slot)."""
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
