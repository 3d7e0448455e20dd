"""Open WebUI's chat export (Settings → Chats → Export, or one chat's "Export chat"): a
JSON array of ``{id, title, chat, created_at, updated_at}``.

``chat.history`` is a tree (``messages``: id → {role, content, parentId, childrenIds,
timestamp}) whose shown branch ends at ``currentId``: walk its parents to the root and
reverse. An export without a history uses the flat ``chat.messages`` list. User and
assistant messages are kept; system messages and empty ones are left out (counted);
other branches (regenerated answers, edits) are left out and counted."""

from __future__ import annotations

from typing import Any

from lumina_app.archive.chat_imports.model import (
    ParsedConversation,
    ParsedMessage,
    active_branch,
    as_time,
    branch_count,
    clean_text,
    described,
    expect,
    title_of,
)
from lumina_app.domain import MsgRole

_ROLES = {"user": MsgRole.USER, "assistant": MsgRole.ASSISTANT}


def parse(document: Any) -> list[ParsedConversation]:
    if isinstance(document, dict) and "chat" in document:
        document = [document]
    expect(isinstance(document, list), "an Open WebUI export is a JSON array of chats")
    return [_conversation(raw, n) for n, raw in enumerate(document)]


def _conversation(raw: Any, n: int) -> ParsedConversation:
    where = f"chat {n + 1}"
    expect(isinstance(raw, dict), f"{where}: expected an object")
    chat = raw.get("chat")
    expect(isinstance(chat, dict), f"{where}: no 'chat' object (is this an Open WebUI export?)")
    source_id = raw.get("id") or chat.get("id")
    expect(isinstance(source_id, str) and source_id != "", f"{where}: no 'id'")
    created = as_time(raw.get("created_at") or chat.get("timestamp"), f"{where}: created_at")
    updated = as_time(raw.get("updated_at"), f"{where}: updated_at", fallback=created)
    conversation = ParsedConversation(
        source_id, title_of(raw.get("title") or chat.get("title")), created, max(created, updated)
    )
    chosen = _branch(chat, where, conversation)
    for m, message in enumerate(chosen):
        expect(isinstance(message, dict), f"{where}, message {m + 1}: expected an object")
        conversation.keep(_message(message, f"{where}, message {m + 1}", conversation.last_time))
    return conversation


def _branch(chat: dict, where: str, conversation: ParsedConversation) -> list:
    history = chat.get("history")
    if isinstance(history, dict) and isinstance(history.get("messages"), dict):
        nodes = history["messages"]
        for node_id, node in nodes.items():
            expect(isinstance(node, dict), f"{where}: message {node_id!r} is not an object")
        children = {k: v.get("childrenIds") or [] for k, v in nodes.items()}
        conversation.branches_skipped = branch_count(children)
        leaf = history.get("currentId")
        if leaf not in nodes:
            leaf = max(nodes, key=lambda k: nodes[k].get("timestamp") or 0, default=None)
        return [nodes[i] for i in active_branch(nodes, leaf, lambda node: node.get("parentId"))]
    messages = chat.get("messages")
    expect(isinstance(messages, list), f"{where}: neither 'history.messages' nor 'messages'")
    return messages


def _message(message: dict, where: str, previous) -> ParsedMessage | None:
    role = _ROLES.get(message.get("role"))
    if role is None:
        return None
    content = message.get("content")
    if isinstance(content, list):  # OpenAI-style parts
        content = "\n".join(
            p if isinstance(p, str) else str(p.get("text") or described(p))
            for p in content
            if isinstance(p, str | dict)
        )
    text = clean_text(content if isinstance(content, str) else "").strip()
    for file in message.get("files") or []:
        if isinstance(file, dict):
            text += ("\n" if text else "") + described({"type": "file", **file})
    if not text:
        return None
    stamp = as_time(message.get("timestamp"), f"{where}: timestamp", fallback=previous)
    return ParsedMessage(role, text, stamp, str(message.get("id") or where))
