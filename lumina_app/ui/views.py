"""Plain dicts the components render: the UI never holds domain objects in state."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TypedDict

from lumina_app.domain import (
    ConversationBusy,
    ConversationInfo,
    LuminaError,
    Msg,
    MsgRole,
    RunEvent,
    RunFinished,
    SessionStarted,
    StoreUnavailable,
)
from lumina_app.domain.views import iso_ms
from lumina_app.services.search import SearchHit
from lumina_app.ui.routes import chat_url
from lumina_app.ui.tool_views import ToolView, stored_cards


class MessageView(TypedDict):
    key: str
    id: int
    seq: int
    role: str
    content: str
    status: str
    error: str
    time: str
    run: str  # the run that wrote an answer ("" for questions): its context can be shown
    tools: list[ToolView]  # an answer's calls; a TOOL row's own result (until paired)


class HitView(TypedDict):
    """A search hit in the sidebar: its snippet is escaped HTML with <mark>ed matches."""

    key: str
    url: str
    title: str
    snippet: str
    role: str
    time: str


class ConversationView(TypedDict):
    uuid: str
    title: str
    status: str
    updated: str
    count: int


def message_view(msg: Msg) -> MessageView:
    return MessageView(
        key=f"m{msg.id}",
        id=msg.id or 0,
        seq=msg.seq,
        role=msg.role.value.lower(),
        content=msg.content,
        status=msg.status.value,
        error=str(msg.meta.get("error") or ""),
        time=iso_ms(msg.created_at) if msg.created_at else "",
        run=str(msg.meta.get("runId") or "") if msg.role is MsgRole.ASSISTANT else "",
        tools=stored_cards(msg),
    )


def question_view(session: SessionStarted, text: str) -> MessageView:
    """The question of a run, as its ``session`` event says it was stored."""
    return MessageView(
        key=f"m{session.user_message_id}",
        id=session.user_message_id,
        seq=session.user_seq,
        role="user",
        content=text,
        status="complete",
        error="",
        time=session.created_at,
        run="",
        tools=[],
    )


async def no_events() -> AsyncIterator[RunEvent | None]:
    """An empty event stream (a run that is gone)."""
    return
    yield


def answer_view(result: RunFinished, seq: int, time: str) -> MessageView:
    """The finished answer of a run, from its ``result`` event."""
    return MessageView(
        key=f"m{result.message_id}",
        id=result.message_id,
        seq=seq,
        role="assistant",
        content=result.content,
        status=result.status.value,
        error=result.error or "",
        time=time,
        run=result.run_id,
        tools=[],
    )


def conversation_view(conv: ConversationInfo) -> ConversationView:
    return ConversationView(
        uuid=conv.uuid,
        title=conv.title or "Untitled",
        status=conv.status.value,
        updated=iso_ms(conv.updated_at),
        count=conv.message_count,
    )


def explain(exc: LuminaError) -> str:
    """A failed send, said for people."""
    if isinstance(exc, ConversationBusy):
        return "This conversation is still answering another message. Wait for it or press Stop."
    if isinstance(exc, StoreUnavailable):
        return "The database is unreachable, so the message was not sent. Try again shortly."
    return str(exc)


def hit_view(hit: SearchHit, agent_id: str) -> HitView:
    return HitView(
        key=f"{hit.conversation_id}:{hit.seq}",
        url=chat_url(agent_id, hit.conversation_id) + f"?seq={hit.seq}",
        title=hit.title or "Untitled",
        snippet=hit.snippet,
        role=hit.role.lower(),
        time=iso_ms(hit.created_at),
    )
