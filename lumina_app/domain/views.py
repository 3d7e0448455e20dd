"""Plain-dict views of conversations and messages shared by the API and the archive, so
the meta.json / history.json shapes are defined once (ARCHITECTURE.md § Archive)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from lumina_app.domain.types import ConversationInfo, MessageStatus, Msg, MsgRole


def iso_ms(moment: datetime) -> str:
    """``2026-03-23T10:12:11.993Z``: ISO-8601 UTC, milliseconds, ``Z``."""
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def iso_us(moment: datetime) -> str:
    """Full precision ISO-8601 UTC with ``Z`` (what the v1 API returns)."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_iso(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def conversation_meta(conv: ConversationInfo) -> dict[str, Any]:
    """The archive's meta.json shape; a fork also names its original (``forkedFrom``)."""
    meta: dict[str, Any] = {
        "conversationId": conv.uuid,
        "agentId": conv.agent_id,
        "title": conv.title,
        "createdAt": iso_ms(conv.created_at),
        "updatedAt": iso_ms(conv.updated_at),
        "status": conv.status.value,
        "stats": {"messageCount": conv.message_count, "toolCallCount": conv.tool_call_count},
    }
    if conv.parent_uuid:
        meta["forkedFrom"] = {"conversationId": conv.parent_uuid, "atSeq": conv.forked_at_seq}
    return meta


_ARCHIVE_ROLE = {
    MsgRole.USER: "user",
    MsgRole.ASSISTANT: "assistant",
    MsgRole.SYSTEM: "system",
    MsgRole.TOOL: "tool",
}


# What a TOOL row's history.json entry keeps of its meta: the call it answers and how it went.
_TOOL_RESULT_KEYS = ("toolCallId", "name", "isError", "durationMs")


def history_entry(msg: Msg) -> dict[str, Any]:
    """The archive's history.json entry shape. An answer replaced by a regenerated one
    says so (``"status": "superseded"``), so an import keeps it out of contexts too. Tool
    calls travel with their rows (``toolCalls`` on the answer that asked, ``toolCallId``,
    ``name``, ``isError``, ``durationMs`` on each result), so an imported conversation's
    calls still pair with their results in later contexts."""
    entry = {
        "role": _ARCHIVE_ROLE[msg.role],
        "content": msg.content,
        "messageId": msg.turn_id,
        "timestamp": iso_ms(msg.created_at) if msg.created_at else None,
    }
    if msg.status is MessageStatus.SUPERSEDED:
        entry["status"] = MessageStatus.SUPERSEDED.value
    if msg.tool_calls:
        entry["toolCalls"] = [
            {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments")}
            for c in msg.tool_calls
        ]
    if msg.role is MsgRole.TOOL:
        entry.update({k: msg.meta[k] for k in _TOOL_RESULT_KEYS if k in msg.meta})
    if "branchOf" in msg.meta:  # an edited question: its branch (docs/API.md, "Branches")
        entry.update({k: msg.meta[k] for k in ("branchOf", "branch") if k in msg.meta})
    return entry
