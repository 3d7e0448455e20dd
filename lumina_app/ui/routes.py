"""Route patterns and URL builders for the UI, in one place."""

from __future__ import annotations

from urllib.parse import quote

HOME = "/"
CHAT_NEW = "/chat/[agent]"
CHAT = "/chat/[agent]/[conversation]"
LOGIN = "/login"
ACCOUNT = "/account"
KEYS = "/keys"
ADMIN = "/admin"
MEMORIES = "/memories"


def chat_url(agent_id: str, conversation_id: str | None = None) -> str:
    base = f"/chat/{quote(agent_id, safe='')}"
    return f"{base}/{quote(conversation_id, safe='')}" if conversation_id else base
