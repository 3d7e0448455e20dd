"""Claude's data export (``conversations.json``: a list of conversations with ``uuid``,
``name``, ``created_at``, ``updated_at`` and ``chat_messages``).

A message has ``sender`` (``human`` / ``assistant``), ``created_at``, and its words in
``text`` and/or ``content`` blocks: ``text`` blocks are kept (joined in order), a
``tool_use`` / ``tool_result`` block is left out, attachments are named in brackets.
Newer exports chain messages with ``parent_message_uuid`` and name the branch shown with
``current_leaf_message_uuid``: then that branch is taken (others counted in
``branches_skipped``); otherwise the list's order is the conversation."""

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

_ROLES = {"human": MsgRole.USER, "user": MsgRole.USER, "assistant": MsgRole.ASSISTANT}


def parse(document: Any) -> list[ParsedConversation]:
    expect(isinstance(document, list), "a Claude export is a JSON array of conversations")
    return [_conversation(raw, n) for n, raw in enumerate(document)]


def _conversation(raw: Any, n: int) -> ParsedConversation:
    where = f"conversation {n + 1}"
    expect(isinstance(raw, dict), f"{where}: expected an object")
    messages = raw.get("chat_messages")
    expect(isinstance(messages, list), f"{where}: no 'chat_messages' (is this a Claude export?)")
    source_id = raw.get("uuid")
    expect(isinstance(source_id, str) and source_id != "", f"{where}: no 'uuid'")
    created = as_time(raw.get("created_at"), f"{where}: created_at")
    updated = as_time(raw.get("updated_at"), f"{where}: updated_at", fallback=created)
    conversation = ParsedConversation(
        source_id, title_of(raw.get("name")), created, max(created, updated)
    )
    for m, message in enumerate(messages):
        expect(isinstance(message, dict), f"{where}, message {m + 1}: expected an object")
    chosen = _branch(raw, messages, conversation)
    for m, message in chosen:
        conversation.keep(_message(message, f"{where}, message {m + 1}", conversation.last_time))
    return conversation


def _branch(raw: dict, messages: list, conversation: ParsedConversation) -> list[tuple[int, dict]]:
    by_id = {m.get("uuid"): (n, m) for n, m in enumerate(messages) if m.get("uuid")}
    leaf = raw.get("current_leaf_message_uuid")
    if leaf not in by_id or not any("parent_message_uuid" in m for m in messages):
        return list(enumerate(messages))
    children: dict[str, list] = {}
    for m in messages:
        children.setdefault(str(m.get("parent_message_uuid")), []).append(m.get("uuid"))
    conversation.branches_skipped = branch_count(children)
    path = active_branch(by_id, leaf, lambda pair: pair[1].get("parent_message_uuid"))
    return [by_id[i] for i in path]


def _message(message: dict, where: str, previous) -> ParsedMessage | None:
    role = _ROLES.get(message.get("sender"))
    if role is None:
        return None
    blocks = message.get("content")
    texts: list[str] = []
    if isinstance(blocks, list) and blocks:
        texts += [
            str(b.get("text") or "")
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text"
        ]
    elif isinstance(message.get("text"), str):
        texts.append(message["text"])
    attached = (message.get("attachments") or []) + (message.get("files") or [])
    texts += [described({"type": "file", **a}) for a in attached if isinstance(a, dict)]
    text = clean_text("\n".join(t for t in texts if t)).strip()
    if not text:
        return None
    stamp = as_time(message.get("created_at"), f"{where}: created_at", fallback=previous)
    return ParsedMessage(role, text, stamp, str(message.get("uuid") or where))
