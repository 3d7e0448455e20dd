"""Reading a conversation folder back: parse and check its meta.json and history.json.

Accepts what Lumina writes and what another system writes in the same layout, where some
fields may be missing (see docs/ARCHIVE.md, "Import"). Anything that cannot be read
faithfully raises ``ArchiveError`` naming the file, and for history.json the entry. The
input may be hostile: deep nesting, huge numbers, lone surrogates, NULs and timestamps
out of range are refused here, before anything reaches SQL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lumina_app.archive.attachments import ARCHIVED, read_files
from lumina_app.archive.branches_file import merge_branches
from lumina_app.archive.format import BRANCHES, HISTORY, META, ArchiveError
from lumina_app.archive.limits import DEFAULT_LIMITS
from lumina_app.archive.tree import read_text, refuse_links
from lumina_app.domain import (
    ConversationInfo,
    ConversationStatus,
    MessageStatus,
    Msg,
    MsgRole,
    Summary,
    utcnow,
)
from lumina_app.domain.access import MAX_CONVERSATION_ID, is_conversation_id, is_safe_name
from lumina_app.domain.views import iso_ms, parse_iso

MAX_AGENT_ID = 64
MAX_TURN_ID = 64  # lumina_message.turn_id is String(64)
MAX_COUNT = 2**31 - 1  # counters are SQL INTEGER: 32 bits on PostgreSQL and MariaDB
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
FUTURE_SLACK = timedelta(days=1)
_ROLES = {
    "user": MsgRole.USER,
    "assistant": MsgRole.ASSISTANT,
    "agent": MsgRole.ASSISTANT,
    "system": MsgRole.SYSTEM,
    "tool": MsgRole.TOOL,
}
_STATUSES = {s.value for s in ConversationStatus}
# A message's status in history.json: absent means complete; only a superseded answer
# (replaced by a regenerated one) says otherwise.
_MESSAGE_STATUSES = {"complete": MessageStatus.COMPLETE, "superseded": MessageStatus.SUPERSEDED}
_SURROGATE = re.compile("[\ud800-\udfff]")  # JSON's "\\ud800" escapes: not text
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass(slots=True)
class ArchivedConversation:
    """One conversation as read from its folder (``conversation.id`` is None)."""

    folder: Path
    conversation: ConversationInfo
    messages: list[Msg]
    summaries: list[Summary] = field(default_factory=list)


# -- parsing -----------------------------------------------------------------------------


def read_conversation(
    folder: Path, *, max_file_bytes: int = DEFAULT_LIMITS.max_file_bytes
) -> ArchivedConversation:
    """Parse one conversation folder; raises ``ArchiveError`` for the first bad file."""
    history_path = folder / HISTORY
    meta_path = folder / META
    refuse_links(folder)
    latest = utcnow() + FUTURE_SLACK
    meta_text = read_text(meta_path, max_file_bytes, missing_ok=True)
    meta = parse_json(meta_path, meta_text) if meta_text is not None else {}
    if not isinstance(meta, dict):
        raise ArchiveError(meta_path, f"expected a JSON object, got {_kind(meta)}")
    fields = _Fields(meta_path, meta, latest)
    messages = _messages(history_path, read_text(history_path, max_file_bytes), latest)
    branches_path = folder / BRANCHES
    branches_text = read_text(branches_path, max_file_bytes, missing_ok=True)
    if branches_text is not None:  # the other branches of edited questions, put back
        messages = merge_branches(
            branches_path,
            parse_json(branches_path, branches_text),
            messages,
            lambda entries: _messages(branches_path, json.dumps(entries), latest),
        )
    first_stamp = next((m.created_at for m in messages if m.created_at), None)
    created_at = fields.timestamp("createdAt") or first_stamp or _mtime(history_path, latest)
    updated_at = fields.timestamp("updatedAt")
    for msg in messages:  # only those before the first timestamped one are still unset
        if msg.created_at is None:
            msg.created_at = msg.updated_at = created_at
    conversation = ConversationInfo(
        uuid=_conversation_uuid(fields, folder),
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
    conversation.parent_uuid, conversation.forked_at_seq = _forked_from(fields)
    conversation.temporary = _temporary(fields)
    return ArchivedConversation(folder, conversation, messages, _summaries(fields, len(messages)))


def parse_json(path: Path, text: str) -> Any:
    """``json.loads``, with every way it can fail on hostile input turned into an
    ``ArchiveError``: bad syntax, nesting too deep for the parser, numbers too long."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise _json_error(path, exc) from None


def _json_items(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """The elements of the JSON array ``text``, one at a time, so a big history.json is
    never held as a list of dicts beside the messages built from it. Not an array: the
    whole document is parsed to say what it is instead."""
    at = _JSON_SPACE.match(text).end()
    if not text.startswith("[", at):
        document = parse_json(path, text)
        raise ArchiveError(path, f"expected a JSON array, got {_kind(document)}")
    at = _JSON_SPACE.match(text, at + 1).end()
    index = 0
    try:
        if text.startswith("]", at):
            at += 1
        else:
            while True:
                item, at = _DECODER.raw_decode(text, at)
                yield index, item
                index += 1
                at = _JSON_SPACE.match(text, at).end()
                if text.startswith("]", at):
                    at += 1
                    break
                if not text.startswith(",", at):
                    raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
                at = _JSON_SPACE.match(text, at + 1).end()
        at = _JSON_SPACE.match(text, at).end()
        if at != len(text):
            raise json.JSONDecodeError("Extra data", text, at)
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise _json_error(path, exc) from None


def _json_error(path: Path, exc: Exception) -> ArchiveError:
    if isinstance(exc, json.JSONDecodeError):
        return ArchiveError(
            path, f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        )
    if isinstance(exc, RecursionError):
        return ArchiveError(path, "invalid JSON: nested too deeply")
    return ArchiveError(path, f"invalid JSON: {str(exc).split(';')[0]}")


class _Fields:
    """Typed access to one JSON object's fields, with errors naming file and field."""

    def __init__(self, path: Path, data: dict[str, Any], latest: datetime, where: str = ""):
        self.path, self.data, self.latest, self.where = path, data, latest, where

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
        if _SURROGATE.search(value):
            raise self.fail(key, "must not contain lone surrogates (\\ud800-\\udfff)")
        if limit is not None and len(value) > limit:
            raise self.fail(key, f"is longer than {limit} characters")
        return value

    def choice(self, key: str, allowed: Collection[str]) -> str | None:
        value = self.text(key, limit=None)
        if value is None:
            return None
        if value.lower() not in allowed:
            raise self.fail(key, f"must be one of {', '.join(sorted(allowed))}, got {_show(value)}")
        return value.lower()

    def timestamp(self, key: str) -> datetime | None:
        """An ISO-8601 moment from 2000-01-01 to a day from now, in UTC."""
        value = self.text(key, limit=64)
        if value is None or value == "":
            return None
        try:
            moment = parse_iso(value)
        except ValueError:
            raise self.fail(key, f"is not an ISO-8601 timestamp: {value!r}") from None
        try:
            moment = moment.astimezone(UTC)
        except OverflowError:  # 9999-12-31T23:00-05:00 is past datetime.max in UTC
            moment = None
        if moment is None or not EARLIEST <= moment <= self.latest:
            raise self.fail(
                key,
                f"is out of range: {value!r} (accepted: {iso_ms(EARLIEST)} to a day from now)",
            )
        return moment


MAX_SUMMARIES = 1000
MAX_SUMMARY_CHARS = 65_536


def _summaries(fields: _Fields, message_count: int) -> list[Summary]:
    """meta.json's optional ``summaries``: rolling summaries, oldest first, each covering
    the conversation up to a seq the archive holds."""
    value = fields.data.get("summaries")
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_SUMMARIES:
        raise fields.fail("summaries", f"must be an array of at most {MAX_SUMMARIES} objects")
    found: list[Summary] = []
    for index, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise fields.fail(f"summaries[{index}]", f"must be an object, got {_kind(entry)}")
        item = _Fields(fields.path, entry, fields.latest, f"summaries[{index}].")
        covered = entry.get("coveredToSeq")
        if isinstance(covered, bool) or not isinstance(covered, int):
            raise item.fail("coveredToSeq", "must be a whole number")
        if not 1 <= covered <= message_count:
            raise item.fail("coveredToSeq", f"must be a seq of this archive (1-{message_count})")
        if found and covered < found[-1].covered_to_seq:
            raise item.fail("coveredToSeq", "must not go back (summaries are oldest first)")
        text = item.text("text", limit=MAX_SUMMARY_CHARS)
        if not text:
            raise item.fail("text", "is missing")
        found.append(
            Summary(
                covered_to_seq=covered,
                text=text,
                model=item.text("model", default="", limit=128) or "",
                created_at=item.timestamp("createdAt"),
            )
        )
    return found


def _conversation_uuid(fields: _Fields, folder: Path) -> str:
    value = fields.text("conversationId", limit=None) or folder.name
    if not is_safe_name(value, max_length=MAX_CONVERSATION_ID):
        raise fields.fail(
            "conversationId",
            f"must be 1-{MAX_CONVERSATION_ID} letters, digits or '-_.@+' "
            f"(not starting with a symbol), got {_show(value)}",
        )
    return value


def _agent_id(fields: _Fields, folder: Path) -> str:
    value = fields.text("agentId", limit=None)
    if value is None and folder.parent.name == "conversations":
        value = folder.parent.parent.name
    if value is None:
        raise fields.fail("agentId", "is missing and the folder is not under agents/<id>/")
    if not is_safe_name(value, max_length=MAX_AGENT_ID):
        raise fields.fail("agentId", f"is not a valid agent id: {_show(value)}")
    return value


def _forked_from(fields: _Fields) -> tuple[str | None, int | None]:
    """meta.json's optional ``forkedFrom``: the original's id and the last seq copied.
    The original need not be in the archive (a fork outlives a deleted parent)."""
    value = fields.data.get("forkedFrom")
    if value is None:
        return None, None
    if not isinstance(value, dict):
        raise fields.fail("forkedFrom", f"must be an object, got {_kind(value)}")
    item = _Fields(fields.path, value, fields.latest, "forkedFrom.")
    parent = item.text("conversationId", limit=None)
    if parent is None or not is_conversation_id(parent):
        raise item.fail("conversationId", f"must be a conversation id, got {_show(parent)}")
    at_seq = value.get("atSeq")
    if isinstance(at_seq, bool) or not isinstance(at_seq, int) or not 0 <= at_seq <= MAX_COUNT:
        raise item.fail("atSeq", f"must be a whole number from 0 to {MAX_COUNT}")
    return parent, at_seq


def _temporary(fields: _Fields) -> bool:
    """meta.json's optional ``temporary``: a conversation kept out of long-term memory."""
    value = fields.data.get("temporary", False)
    if not isinstance(value, bool):
        raise fields.fail("temporary", f"must be true or false, got {_kind(value)}")
    return value


def _tool_calls(fields: _Fields) -> int:
    stats = fields.data.get("stats")
    if stats is None:
        return 0
    if not isinstance(stats, dict):
        raise fields.fail("stats", f"must be an object, got {_kind(stats)}")
    count = stats.get("toolCallCount", 0)
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_COUNT:
        raise fields.fail(
            "stats.toolCallCount",
            f"must be a non-negative integer up to {MAX_COUNT}, got {_show(count)}",
        )
    return count


def _messages(path: Path, text: str, latest: datetime) -> list[Msg]:
    """history.json entries in order; a missing timestamp takes the previous message's,
    a missing messageId joins the current turn (a user message starts ``turn-<n>``)."""
    msgs: list[Msg] = []
    turn_ids: dict[str, str] = {}  # one string per turn id, not one per message
    turn_id, stamp = "", None
    for index, entry in _json_items(path, text):
        if not isinstance(entry, dict):
            raise ArchiveError(path, f"entry {index}: expected an object, got {_kind(entry)}")
        fields = _Fields(path, entry, latest, f"entry {index}: ")
        role = fields.choice("role", _ROLES)
        if role is None:
            raise fields.fail("role", "is missing")
        content = fields.text("content", limit=None)
        if content is None:
            raise fields.fail("content", "is missing")
        given_turn = fields.text("messageId", limit=MAX_TURN_ID)
        if given_turn:
            turn_id = turn_ids.setdefault(given_turn, given_turn)
        elif _ROLES[role] is MsgRole.USER or not turn_id:
            turn_id = f"turn-{index + 1}"
        stamp = fields.timestamp("timestamp") or stamp
        status = _MESSAGE_STATUSES[fields.choice("status", _MESSAGE_STATUSES) or "complete"]
        msgs.append(
            Msg(
                role=_ROLES[role],
                content=content,
                seq=index + 1,
                turn_id=turn_id,
                status=status,
                created_at=stamp,
                updated_at=stamp,
                meta=_tool_meta(fields, _ROLES[role])
                | _branch_meta(fields)
                | _files_meta(fields, turn_id),
            )
        )
    return msgs


def _files_meta(fields: _Fields, turn_id: str) -> dict[str, Any]:
    """An entry's ``files`` (archive/attachments.py), checked here and uploaded by the
    import: the ids in the archive are never used (they were another store's)."""
    value = fields.data.get("files")
    if value is None:
        return {}
    try:
        listed = read_files(value, turn_id)
    except ValueError as exc:
        raise fields.fail("files", str(exc)) from None
    return {ARCHIVED: listed} if listed else {}


MAX_TOOL_CALLS = 128
MAX_TOOL_NAME = 128
MAX_TOOL_ARGUMENTS = 65_536


def _tool_meta(fields: _Fields, role: MsgRole) -> dict[str, Any]:
    """A history entry's tool fields as message meta: an assistant's ``toolCalls``
    (``[{id, name, arguments}]``), a tool result's ``toolCallId``, ``name``, ``isError``
    and ``durationMs``. Other roles carry none."""
    meta: dict[str, Any] = {}
    if role is MsgRole.ASSISTANT and fields.data.get("toolCalls") is not None:
        calls = fields.data["toolCalls"]
        if not isinstance(calls, list) or not 0 < len(calls) <= MAX_TOOL_CALLS:
            raise fields.fail("toolCalls", f"must be a list of 1 to {MAX_TOOL_CALLS} calls")
        meta["toolCalls"] = [_tool_call(fields, n, call) for n, call in enumerate(calls)]
    if role is MsgRole.TOOL:
        for key in ("toolCallId", "name"):
            value = fields.text(key, limit=MAX_TOOL_NAME)
            if value is not None:
                meta[key] = value
        if (failed := fields.data.get("isError")) is not None:
            if not isinstance(failed, bool):
                raise fields.fail("isError", f"must be true or false, got {_show(failed)}")
            meta["isError"] = failed
        if (ms := fields.data.get("durationMs")) is not None:
            if isinstance(ms, bool) or not isinstance(ms, int) or not 0 <= ms <= MAX_COUNT:
                raise fields.fail("durationMs", f"must be a non-negative integer, got {_show(ms)}")
            meta["durationMs"] = ms
    return meta


def _branch_meta(fields: _Fields) -> dict[str, int]:
    """An edited question's ``branchOf`` (its group's seq) and ``branch`` (its number)."""
    meta = {}
    for key in ("branchOf", "branch"):
        value = fields.data.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
            raise fields.fail(key, f"must be a whole number from 1, got {_show(value)}")
        meta[key] = value
    return meta


def _tool_call(fields: _Fields, index: int, call: Any) -> dict[str, str]:
    if not isinstance(call, dict):
        raise fields.fail(f"toolCalls[{index}]", f"must be an object, got {_kind(call)}")
    one = _Fields(fields.path, call, fields.latest, f"{fields.where}toolCalls[{index}]: ")
    limits = {"id": MAX_TOOL_NAME, "name": MAX_TOOL_NAME, "arguments": MAX_TOOL_ARGUMENTS}
    out = {}
    for key, limit in limits.items():
        value = one.text(key, limit=limit)
        if value is None:
            raise one.fail(key, "is missing")
        out[key] = value
    return out


def _mtime(path: Path, latest: datetime) -> datetime:
    """history.json's modification time; the import's own time if that is out of range
    (a file unpacked from an old tarball, a clock at 1970)."""
    moment = datetime.fromtimestamp(path.lstat().st_mtime, UTC)
    return moment if EARLIEST <= moment <= latest else utcnow()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return kinds.get(type(value), "a number" if isinstance(value, int | float) else "a value")


def _show(value: Any, limit: int = 40) -> str:
    """A value for an error message: its repr, cut short (an archive may hold megabytes)."""
    text = repr(value)  # an int from JSON has at most 4,300 digits: repr() works
    return text if len(text) <= limit else f"{text[: limit - 5]}...{text[-2:]}"
