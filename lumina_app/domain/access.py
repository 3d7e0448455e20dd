"""Who is calling, and the one visibility rule: a caller sees what its ``owner`` owns.

Every way in (REST, the UI socket, the CLI) resolves its caller to a :class:`Principal`
and every query for conversations and runs is scoped to ``principal.owner``; anything
else — someone else's id, a malformed id — is simply not found.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from lumina_app.domain.accounts import Role

# Ids that can name a conversation besides a uuid: those an archive import keeps
# (``conv-mn3112l3``). One path component, no leading dot; fullmatch, so no trailing "\n".
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]*")
MAX_CONVERSATION_ID = 36  # lumina_conversation.uuid is String(36)


class Via(StrEnum):
    """How a caller proved who it is."""

    LOOPBACK = "loopback"  # no keys, no users: the local operator on this machine
    API_KEY = "api-key"
    SESSION = "session"  # a signed-in browser
    OPERATOR = "operator"  # the CLI, run by whoever holds the database credentials


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling. ``owner`` scopes the data; a user account adds ``user_id`` and
    ``role``; ``session_id`` is the signed-in browser, ``address`` where the call came from
    (for the audit log)."""

    owner: str
    via: Via
    name: str = ""
    user_id: int | None = None
    role: str = ""
    session_id: int | None = None
    address: str = ""

    @property
    def label(self) -> str:
        """For people: the owner, or what the local operator is called."""
        return self.name or self.owner or "local operator"

    @property
    def is_admin(self) -> bool:
        """An admin account, or the operator at the CLI."""
        return self.via is Via.OPERATOR or (self.user_id is not None and self.role == Role.ADMIN)


LOCAL_OWNER = ""
LOCAL = Principal(owner=LOCAL_OWNER, via=Via.LOOPBACK)
OPERATOR = Principal(owner=LOCAL_OWNER, via=Via.OPERATOR, name="operator")


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a request or a UI socket presents: a bearer key, a session cookie's token, and
    the address it comes from (as the server sees it: forwarding headers are not trusted)."""

    authorization: str | None = None
    session_token: str | None = None
    client_host: str | None = None
    user_agent: str = ""


@dataclass(slots=True)
class SignInSession:
    """A signed-in browser: the cookie holds a random token, the store only its hash."""

    id: int
    owner: str
    method: str  # how it signed in: "api-key" or "password"
    created_at: datetime
    expires_at: datetime
    last_seen_at: datetime
    user_agent: str = ""
    client_ip: str = ""
    user_id: int | None = None
    role: str = ""  # the user's role, for a session of a user account


def is_safe_name(name: str, *, max_length: int = 128) -> bool:
    """Whether ``name`` can be one folder name of the archive layout / a foreign id."""
    return 0 < len(name) <= max_length and SAFE_NAME.fullmatch(name) is not None


def is_conversation_id(value: object) -> bool:
    """A uuid, or a foreign id an archive import kept; anything else cannot name a
    conversation and is not found without touching the store."""
    if not isinstance(value, str):
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return is_safe_name(value, max_length=MAX_CONVERSATION_ID)
    return True


RUN_ID = re.compile(r"run-[0-9a-f]{16}")


def is_run_id(value: object) -> bool:
    """The engine's own ``run-<16 hex>`` shape; anything else names no run."""
    return isinstance(value, str) and RUN_ID.fullmatch(value) is not None
