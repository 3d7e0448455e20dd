"""Route patterns and URL builders for the UI, in one place."""

from __future__ import annotations

from urllib.parse import quote

HOME = "/"
# One route for a new conversation and an open one: moving a new conversation to its
# address (``/chat/<agent>`` → ``/chat/<agent>/<uuid>``) keeps the page mounted, so what
# is being typed, the live follower and the sidebar stay as they are.
CHAT = "/chat/[agent]/[[conversation]]"
LOGIN = "/login"
ACCOUNT = "/account"
KEYS = "/keys"
ADMIN = "/admin"
MEMORIES = "/memories"
IMPORT = "/import"


def chat_url(agent_id: str, conversation_id: str | None = None) -> str:
    base = f"/chat/{quote(agent_id, safe='')}"
    return f"{base}/{quote(conversation_id, safe='')}" if conversation_id else base
