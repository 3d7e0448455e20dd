"""ChatGPT's data export (``conversations.json``, alone or in the export's zip).

Each conversation is a tree (``mapping``: node id → {message, parent, children}); the
branch the person last saw ends at ``current_node``: walk its parents to the root and
reverse. Kept: user and assistant messages whose content is text (``text`` and
``multimodal_text``: string parts as written, other parts — images, files, audio —
described in brackets). Left out (counted in ``left_out``): system messages (ChatGPT's
hidden scaffolding and custom instructions), tool messages and an assistant's calls to
a tool (browsing, code runs: no call/result pairs Lumina could replay), hidden nodes,
reasoning summaries, and empty messages. Every other branch (an edited question, a
regenerated answer) is left out and counted in ``branches_skipped``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lumina_app.archive.chat_imports.model import (
    ImportFormatError,
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
_TEXT_TYPES = {"text", "multimodal_text"}


def parse(document: Any) -> list[ParsedConversation]:
    expect(isinstance(document, list), "a ChatGPT export is a JSON array of conversations")
    return [_conversation(raw, n) for n, raw in enumerate(document)]


def _conversation(raw: Any, n: int) -> ParsedConversation:
    where = f"conversation {n + 1}"
    expect(isinstance(raw, dict), f"{where}: expected an object")
    mapping = raw.get("mapping")
    expect(isinstance(mapping, dict), f"{where}: no 'mapping' tree (is this a ChatGPT export?)")
    source_id = raw.get("conversation_id") or raw.get("id")
    expect(isinstance(source_id, str) and source_id != "", f"{where}: no 'id'")
    for node_id, node in mapping.items():
        expect(isinstance(node, dict), f"{where}: node {node_id!r} is not an object")
    created = as_time(raw.get("create_time"), f"{where}: create_time")
    updated = as_time(raw.get("update_time"), f"{where}: update_time", fallback=created)
    leaf = raw.get("current_node")
    if leaf not in mapping:  # an export without it: the newest leaf
        leaves = [k for k, v in mapping.items() if not v.get("children")]
        expect(bool(leaves) or not mapping, f"{where}: the tree has no leaf")
        leaf = max(leaves, key=lambda k: _node_time(mapping[k]), default=None)
    path = active_branch(mapping, leaf, lambda node: node.get("parent"))
    conversation = ParsedConversation(
        source_id, title_of(raw.get("title")), created, max(created, updated)
    )
    children = {k: v.get("children") or [] for k, v in mapping.items()}
    conversation.branches_skipped = branch_count(children)
    for node_id in path:
        message = mapping[node_id].get("message")
        if message is not None:  # a node without one (the root) is not counted as left out
            where_node = f"{where}, node {node_id!r}"
            conversation.keep(_message(message, node_id, where_node, conversation.last_time))
    return conversation


def _node_time(node: dict) -> float:
    message = node.get("message") or {}
    stamp = message.get("create_time")
    return stamp if isinstance(stamp, int | float) else 0.0


def _message(message: Any, node_id: str, where: str, previous: datetime) -> ParsedMessage | None:
    expect(isinstance(message, dict), f"{where}: 'message' is not an object")
    author = message.get("author") or {}
    role = _ROLES.get(author.get("role") if isinstance(author, dict) else None)
    metadata = message.get("metadata") or {}
    if role is None or (
        isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")
    ):
        return None
    if role is MsgRole.ASSISTANT and message.get("recipient", "all") != "all":
        return None  # a call to a tool
    content = message.get("content") or {}
    expect(isinstance(content, dict), f"{where}: 'content' is not an object")
    if content.get("content_type", "text") not in _TEXT_TYPES:
        return None
    parts = content.get("parts") or []
    expect(isinstance(parts, list), f"{where}: 'content.parts' is not a list")
    text = clean_text("\n".join(_part(p, where) for p in parts if p not in ("", None))).strip()
    if not text:
        return None
    stamp = as_time(message.get("create_time"), f"{where}: create_time", fallback=previous)
    return ParsedMessage(role, text, stamp, str(message.get("id") or node_id))


def _part(part: Any, where: str) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        return described(part)
    raise ImportFormatError(f"{where}: a content part is neither text nor an object")
