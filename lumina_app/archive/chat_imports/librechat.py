"""LibreChat's conversation export (the "Export" dialog, JSON): ``{conversationId, title,
messages}``, one conversation per file (an array of such is read as several).

Messages form a tree by ``parentMessageId`` (the root's parent is the nil uuid); they come
flat, or nested under ``children`` when exported "recursive". The branch taken is the one
ending at the latest message (by ``createdAt``): walk its parents to the root and reverse.
``isCreatedByUser`` (or ``sender`` "User") says who wrote it; the words are ``text``, or
the ``content`` parts' text when ``text`` is empty (tool calls and thinking left out)."""

from __future__ import annotations

from typing import Any

from lumina_app.archive.chat_imports.model import (
    ParsedConversation,
    ParsedMessage,
    active_branch,
    as_time,
    branch_count,
    clean_text,
    expect,
    title_of,
)
from lumina_app.domain import MsgRole

_NIL = "00000000-0000-0000-0000-000000000000"


def parse(document: Any) -> list[ParsedConversation]:
    if isinstance(document, dict):
        document = [document]
    expect(isinstance(document, list), "a LibreChat export is a JSON object")
    return [_conversation(raw, n) for n, raw in enumerate(document)]


def _flatten(messages: list, where: str, out: list[dict]) -> list[dict]:
    for message in messages:
        expect(isinstance(message, dict), f"{where}: a message is not an object")
        out.append(message)
        kids = message.get("children")
        if isinstance(kids, list):
            _flatten(kids, where, out)
    return out


def _conversation(raw: Any, n: int) -> ParsedConversation:
    where = f"conversation {n + 1}"
    expect(isinstance(raw, dict), f"{where}: expected an object")
    messages = raw.get("messages")
    expect(
        isinstance(messages, list) and isinstance(raw.get("conversationId"), str),
        f"{where}: no 'conversationId' and 'messages' (is this a LibreChat export?)",
    )
    flat = _flatten(messages, where, [])
    nodes = {str(m.get("messageId")): m for m in flat if m.get("messageId")}
    expect(len(nodes) == len(flat), f"{where}: a message has no 'messageId'")
    times = {
        k: as_time(m.get("createdAt"), f"{where}, message {k!r}: createdAt")
        for k, m in nodes.items()
    }
    first = min(times.values()) if times else as_time(raw.get("exportAt"), f"{where}: exportAt")
    created = as_time(raw.get("createdAt"), f"{where}: createdAt", fallback=first)
    newest = max(times.values(), default=created)
    updated = as_time(raw.get("updatedAt"), f"{where}: updatedAt", fallback=newest)
    conversation = ParsedConversation(
        raw["conversationId"], title_of(raw.get("title")), created, max(created, updated)
    )
    children: dict[str, list] = {}
    for key, message in nodes.items():
        children.setdefault(str(message.get("parentMessageId") or _NIL), []).append(key)
    conversation.branches_skipped = branch_count(children)
    leaf = max(nodes, key=lambda k: times[k], default=None)
    for key in active_branch(nodes, leaf, lambda m: m.get("parentMessageId")):
        conversation.keep(_message(nodes[key], key, times[key]))
    return conversation


def _message(message: dict, key: str, stamp) -> ParsedMessage | None:
    user = message.get("isCreatedByUser")
    if not isinstance(user, bool):
        user = message.get("sender") == "User"
    text = message.get("text") if isinstance(message.get("text"), str) else ""
    if not text.strip() and isinstance(message.get("content"), list):
        parts = []
        for part in message["content"]:
            if isinstance(part, dict) and part.get("type") == "text":
                value = part.get("text")
                parts.append(
                    value.get("value", "") if isinstance(value, dict) else str(value or "")
                )
        text = "\n".join(p for p in parts if p)
    text = clean_text(text).strip()
    if not text:
        return None
    return ParsedMessage(MsgRole.USER if user else MsgRole.ASSISTANT, text, stamp, key)
