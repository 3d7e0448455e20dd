"""Messages and conversations as the rest of the app sees them."""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from lumina_app.domain.events import RunStatus, Scenario
from lumina_app.domain.ids import ConversationPk, ConversationUuid


class MsgRole(StrEnum):
    """Stored roles (ARCHITECTURE.md § Data model); ``chat_role`` maps them to the wire."""

    USER = "USER"
    ASSISTANT = "ASSISTANT"
    SYSTEM = "SYSTEM"
    TOOL = "TOOL"

    @property
    def chat_role(self) -> str:
        return self.value.lower()


class MessageStatus(StrEnum):
    COMPLETE = "complete"
    STREAMING = "streaming"
    STOPPED = "stopped"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    # An answer replaced by a regenerated one: kept (versions, export) but out of every
    # context, window, summary and search.
    SUPERSEDED = "superseded"

    @property
    def is_final(self) -> bool:
        return self is not MessageStatus.STREAMING


class ImportOutcome(StrEnum):
    """What importing one archived conversation did."""

    CREATED = "created"
    APPENDED = "appended"
    UNCHANGED = "unchanged"


class ConversationStatus(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


def utcnow() -> datetime:
    """Timezone-aware UTC now; always called, never evaluated at import."""
    return datetime.now(UTC)


def new_turn_id() -> str:
    """``msg-<base36 ms>-<random>``: sortable by time, shared by a question and its answer."""
    millis = int(time.time() * 1000)
    return f"msg-{_base36(millis)}-{secrets.token_hex(4)}"


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while number:
        number, rem = divmod(number, 36)
        out = digits[rem] + out
    return out or "0"


# What of a message's meta the hot window keeps: the tool calls and what a result answers,
# and the files a question carries (what a context sends of them).
HOT_META = ("toolCalls", "toolCallId", "name", "isError", "durationMs", "files")


@dataclass(slots=True)
class Msg:
    """One message; ``seq`` orders it within its conversation, ``turn_id`` pairs Q and A."""

    role: MsgRole
    content: str
    seq: int = 0
    turn_id: str = ""
    status: MessageStatus = MessageStatus.COMPLETE
    id: int | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def user(cls, content: str, **kwargs: Any) -> Msg:
        return cls(MsgRole.USER, content, **kwargs)

    @classmethod
    def assistant(cls, content: str, **kwargs: Any) -> Msg:
        return cls(MsgRole.ASSISTANT, content, **kwargs)

    @classmethod
    def system(cls, content: str, **kwargs: Any) -> Msg:
        return cls(MsgRole.SYSTEM, content, **kwargs)

    @classmethod
    def tool(cls, content: str, *, call_id: str, name: str, **kwargs: Any) -> Msg:
        """A tool call's result; ``meta`` names the call (``toolCallId``) it answers."""
        meta = {"toolCallId": call_id, "name": name, **kwargs.pop("meta", {})}
        return cls(MsgRole.TOOL, content, meta=meta, **kwargs)

    @property
    def tool_calls(self) -> list[dict[str, str]]:
        """The calls an assistant message asked for (``{id, name, arguments}`` each)."""
        calls = self.meta.get("toolCalls") if self.role is MsgRole.ASSISTANT else None
        return calls if isinstance(calls, list) else []

    @property
    def files(self) -> list[dict[str, Any]]:
        """The files a question carries (``{id, name, type, size}`` each, in order)."""
        files = self.meta.get("files") if self.role is MsgRole.USER else None
        return files if isinstance(files, list) else []

    @property
    def tool_call_id(self) -> str | None:
        """The call a TOOL message answers."""
        call_id = self.meta.get("toolCallId") if self.role is MsgRole.TOOL else None
        return call_id if isinstance(call_id, str) else None

    def to_hot(self) -> dict[str, Any]:
        """The compact form kept in the hot window (of ``meta``, only what a context uses)."""
        hot = {
            "id": self.id,
            "seq": self.seq,
            "role": self.role.value,
            "content": self.content,
            "turn": self.turn_id,
            "status": self.status.value,
            "ts": self.created_at.isoformat() if self.created_at else None,
        }
        tool_meta = {k: self.meta[k] for k in HOT_META if k in self.meta}
        if tool_meta:
            hot["meta"] = tool_meta
        return hot

    @classmethod
    def from_hot(cls, data: dict[str, Any]) -> Msg:
        ts = data.get("ts")
        return cls(
            role=MsgRole(data["role"]),
            content=data["content"],
            seq=data["seq"],
            turn_id=data.get("turn", ""),
            status=MessageStatus(data.get("status", "complete")),
            id=data.get("id"),
            created_at=datetime.fromisoformat(ts) if ts else None,
            meta=data.get("meta") or {},
        )


@dataclass(frozen=True, slots=True)
class Summary:
    """The rolling summary of a conversation's messages up to ``covered_to_seq`` (what
    left the window), carried into contexts as one system message."""

    covered_to_seq: int
    text: str
    model: str = ""
    id: int | None = None
    created_at: datetime | None = None

    def to_hot(self) -> dict[str, Any]:
        return {"id": self.id, "to": self.covered_to_seq, "text": self.text, "model": self.model}

    @classmethod
    def from_hot(cls, data: dict[str, Any]) -> Summary:
        return cls(covered_to_seq=data["to"], text=data["text"], model=data.get("model", ""),
                   id=data.get("id"))  # fmt: skip


@dataclass(slots=True)
class ConversationInfo:
    """A conversation's metadata, without its messages."""

    uuid: ConversationUuid
    agent_id: str
    title: str
    status: ConversationStatus
    message_count: int
    tool_call_count: int
    last_seq: int
    owner: str
    created_at: datetime
    updated_at: datetime
    id: ConversationPk | None = None
    # A fork names the conversation it was copied from and the last seq it copied.
    parent_uuid: str | None = None
    forked_at_seq: int | None = None
    # A temporary conversation: nothing is read from or written to long-term memory.
    temporary: bool = False
    # Kept on top of its owner's list; archived: out of the list, still open and found.
    pinned: bool = False
    archived_at: datetime | None = None

    @classmethod
    def new(
        cls, *, agent_id: str, title: str = "", owner: str = "", temporary: bool = False
    ) -> ConversationInfo:
        """One not stored yet (no ``id``): the cold store inserts it."""
        now = utcnow()
        return cls(
            uuid=ConversationUuid(str(uuid.uuid4())),
            agent_id=agent_id,
            title=title[:255],
            status=ConversationStatus.IDLE,
            message_count=0,
            tool_call_count=0,
            last_seq=0,
            owner=owner,
            created_at=now,
            updated_at=now,
            temporary=temporary,
        )


@dataclass(slots=True)
class RunRecord:
    """What a run used and how it ended: kept in ``lumina_run`` for audit and replay."""

    run_id: str
    conversation_pk: ConversationPk
    agent_id: str
    owner: str
    scenario: Scenario
    provider: str
    model: str
    status: RunStatus = RunStatus.RUNNING
    context_first_seq: int | None = None
    context_last_seq: int | None = None
    context_messages: int = 0
    user_message_id: int | None = None
    assistant_message_id: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    # What the context was made of (prompt hash, summary, message ids): the recipe that
    # rebuilds exactly what the provider was sent; and how many window messages the token
    # budget left out.
    context: dict[str, Any] | None = None
    trimmed: int = 0
