"""Plain dicts the components render: the UI never holds domain objects in state."""

from __future__ import annotations

from typing import Any, TypedDict

from lumina_app.domain import ConversationInfo, Msg
from lumina_app.domain.views import iso_ms

# The browser UI is the local operator's console: it acts as the loopback owner.
UI_OWNER = ""


class MessageView(TypedDict):
    key: str
    id: int
    seq: int
    role: str
    content: str
    status: str
    error: str
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
    )


def answer_view(result: dict[str, Any], seq: int, time: str) -> MessageView:
    """The finished answer of a run, from its ``result`` event."""
    return MessageView(
        key=f"m{result['messageId']}",
        id=result["messageId"],
        seq=seq,
        role="assistant",
        content=result.get("content", ""),
        status=result["status"],
        error=result.get("error") or "",
        time=time,
    )


def conversation_view(conv: ConversationInfo) -> ConversationView:
    return ConversationView(
        uuid=conv.uuid,
        title=conv.title or "Untitled",
        status=conv.status.value,
        updated=iso_ms(conv.updated_at),
        count=conv.message_count,
    )
