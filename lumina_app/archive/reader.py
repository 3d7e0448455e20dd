"""Reading archive trees back: find conversation folders, parse and check their files.

Accepts what Lumina writes and what another system writes in the same layout, where some
fields may be missing (see docs/ARCHIVE.md, "Import"). Anything that cannot be read
faithfully raises ``ArchiveError`` naming the file, and for history.json the entry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lumina_app.archive.format import HISTORY, META, ArchiveError, is_safe_name
from lumina_app.domain import ConversationInfo, ConversationStatus, MessageStatus, Msg, MsgRole
from lumina_app.domain.views import parse_iso

MAX_CONVERSATION_ID = 36  # lumina_conversation.uuid is String(36)
MAX_AGENT_ID = 64
MAX_TURN_ID = 64  # lumina_message.turn_id is String(64)
_ROLES = {
    "user": MsgRole.USER,
    "assistant": MsgRole.ASSISTANT,
    "agent": MsgRole.ASSISTANT,
    "system": MsgRole.SYSTEM,
    "tool": MsgRole.TOOL,
}
_STATUSES = {s.value for s in ConversationStatus}


@dataclass(slots=True)
class ArchivedConversation:
    """One conversation as read from its folder (``conversation.id`` is None)."""

    folder: Path
    conversation: ConversationInfo
    messages: list[Msg]


# -- finding folders ---------------------------------------------------------------------


def find_conversation_folders(path: Path) -> list[Path]:
    """Conversation folders under ``path``: an archive root (holding ``agents/``), an
    ``agents`` folder, one agent's folder, or a single conversation folder."""
    if not path.exists():
        raise ArchiveError(path, "no such file or directory")
    if not path.is_dir():
        raise ArchiveError(path, "not a directory (expected an archive folder or a .zip)")
    if (path / HISTORY).exists() or (path / META).exists():
        return [path]
    if (path / "conversations").is_dir():
        return _subfolders(path / "conversations")
    agents = path / "agents" if (path / "agents").is_dir() else path
    found = [
        folder
        for agent in _subfolders(agents)
        if (agent / "conversations").is_dir()
        for folder in _subfolders(agent / "conversations")
    ]
    if not found and agents is path:
        raise ArchiveError(
            path,
            "no archive here: expected agents/<agentId>/conversations/<convId>/ "
            "or a conversation folder holding history.json",
        )
    return found


def _subfolders(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))


# -- parsing -----------------------------------------------------------------------------


def read_conversation(folder: Path) -> ArchivedConversation:
    """Parse one conversation folder; raises ``ArchiveError`` for the first bad file."""
    history_path = folder / HISTORY
    meta_path = folder / META
    history = load_json(history_path)
    if not isinstance(history, list):
        raise ArchiveError(history_path, f"expected a JSON array, got {_kind(history)}")
    meta = load_json(meta_path) if meta_path.exists() else {}
    if not isinstance(meta, dict):
        raise ArchiveError(meta_path, f"expected a JSON object, got {_kind(meta)}")
    fields = _Fields(meta_path, meta)
    messages = _messages(history_path, history)
    first_stamp = next((m.created_at for m in messages if m.created_at), None)
    created_at = fields.timestamp("createdAt") or first_stamp or _mtime(history_path)
    updated_at = fields.timestamp("updatedAt")
    for msg in messages:  # only those before the first timestamped one are still unset
        if msg.created_at is None:
            msg.created_at = msg.updated_at = created_at
    conversation = ConversationInfo(
        uuid=_conversation_id(fields, folder),
        agent_id=_agent_id(fields, folder),
        title=fields.text("title", default="", limit=None) or "",
        status=ConversationStatus(
            fields.choice("status", _STATUSES)
            or (ConversationStatus.COMPLETED if messages else ConversationStatus.IDLE)
        ),
        message_count=len(messages),
        tool_call_count=_tool_calls(fields),
        last_seq=len(messages),
        owner="",
        created_at=created_at,
        updated_at=updated_at or (messages[-1].created_at if messages else created_at),
    )
    return ArchivedConversation(folder, conversation, messages)


def load_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ArchiveError(path, "file is missing") from None
    except UnicodeDecodeError as exc:
        raise ArchiveError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ArchiveError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArchiveError(
            path, f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


class _Fields:
    """Typed access to one JSON object's fields, with errors naming file and field."""

    def __init__(self, path: Path, data: dict[str, Any], where: str = "") -> None:
        self.path, self.data, self.where = path, data, where

    def fail(self, key: str, problem: str) -> ArchiveError:
        return ArchiveError(self.path, f"{self.where}{key!r} {problem}")

    def text(self, key: str, *, default: str | None = None, limit: int | None) -> str | None:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {_kind(value)}")
        if "\x00" in value:
            raise self.fail(key, "must not contain NUL characters")
        if limit is not None and len(value) > limit:
            raise self.fail(key, f"is longer than {limit} characters")
        return value

    def choice(self, key: str, allowed: set[str]) -> str | None:
        value = self.text(key, limit=None)
        if value is None:
            return None
        if value.lower() not in allowed:
            raise self.fail(key, f"must be one of {', '.join(sorted(allowed))}, got {value!r}")
        return value.lower()

    def timestamp(self, key: str) -> datetime | None:
        value = self.text(key, limit=64)
        if value is None or value == "":
            return None
        try:
            return parse_iso(value)
        except ValueError:
            raise self.fail(key, f"is not an ISO-8601 timestamp: {value!r}") from None


def _conversation_id(fields: _Fields, folder: Path) -> str:
    value = fields.text("conversationId", limit=None) or folder.name
    if not is_safe_name(value, max_length=MAX_CONVERSATION_ID):
        raise fields.fail(
            "conversationId",
            f"must be 1-{MAX_CONVERSATION_ID} letters, digits or '-_.@+' "
            f"(not starting with a symbol), got {value!r}",
        )
    return value


def _agent_id(fields: _Fields, folder: Path) -> str:
    value = fields.text("agentId", limit=None)
    if value is None and folder.parent.name == "conversations":
        value = folder.parent.parent.name
    if value is None:
        raise fields.fail("agentId", "is missing and the folder is not under agents/<id>/")
    if not is_safe_name(value, max_length=MAX_AGENT_ID):
        raise fields.fail("agentId", f"is not a valid agent id: {value!r}")
    return value


def _tool_calls(fields: _Fields) -> int:
    stats = fields.data.get("stats")
    if stats is None:
        return 0
    if not isinstance(stats, dict):
        raise fields.fail("stats", f"must be an object, got {_kind(stats)}")
    count = stats.get("toolCallCount", 0)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise fields.fail("stats.toolCallCount", f"must be a non-negative integer, got {count!r}")
    return count


def _messages(path: Path, history: list[Any]) -> list[Msg]:
    """history.json entries in order; a missing timestamp takes the previous message's,
    a missing messageId joins the current turn (a user message starts ``turn-<n>``)."""
    msgs: list[Msg] = []
    turn_id, stamp = "", None
    for index, entry in enumerate(history):
        if not isinstance(entry, dict):
            raise ArchiveError(path, f"entry {index}: expected an object, got {_kind(entry)}")
        fields = _Fields(path, entry, f"entry {index}: ")
        role = fields.choice("role", set(_ROLES))
        if role is None:
            raise fields.fail("role", "is missing")
        content = fields.text("content", limit=None)
        if content is None:
            raise fields.fail("content", "is missing")
        given_turn = fields.text("messageId", limit=MAX_TURN_ID)
        if given_turn:
            turn_id = given_turn
        elif _ROLES[role] is MsgRole.USER or not turn_id:
            turn_id = f"turn-{index + 1}"
        stamp = fields.timestamp("timestamp") or stamp
        msgs.append(
            Msg(
                role=_ROLES[role],
                content=content,
                seq=index + 1,
                turn_id=turn_id,
                status=MessageStatus.COMPLETE,
                created_at=stamp,
                updated_at=stamp,
            )
        )
    return msgs


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return kinds.get(type(value), "a number" if isinstance(value, int | float) else "a value")
