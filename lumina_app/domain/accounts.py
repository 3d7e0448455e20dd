"""User accounts, their API keys and the audit log, as the rest of the app sees them.

A user's ``username`` is also the ``owner`` of everything it creates, so a key from
``LUMINA_API_KEYS`` whose owner equals a username reaches the same conversations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

# Lower-case ASCII only: the same name on every database (no case- or accent-insensitive
# collation can make two accounts one), and safe as an owner and in a URL path.
USERNAME = re.compile(r"[a-z0-9][a-z0-9._@-]{0,63}")
MAX_PASSWORD_CHARS = 1024
MAX_KEY_NAME_CHARS = 64


class Role(StrEnum):
    ADMIN = "admin"
    MEMBER = "member"


@dataclass(frozen=True, slots=True)
class User:
    id: int
    username: str
    role: Role
    created_at: datetime
    disabled_at: datetime | None = None
    must_change_password: bool = False

    @property
    def disabled(self) -> bool:
        return self.disabled_at is not None


@dataclass(frozen=True, slots=True)
class ApiKeyInfo:
    """A user's API key as lists show it: never the key, only its first characters."""

    id: int
    user_id: int
    username: str
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None


class AuditEvent(StrEnum):
    SIGN_IN = "sign-in"
    SIGN_IN_FAILED = "sign-in-failed"
    SIGN_OUT = "sign-out"
    KEY_USED = "key-used"
    KEY_CREATED = "key-created"
    KEY_REVOKED = "key-revoked"
    USER_CREATED = "user-created"
    USER_DISABLED = "user-disabled"
    USER_ENABLED = "user-enabled"
    PASSWORD_CHANGED = "password-changed"
    PASSWORD_RESET = "password-reset"
    SESSIONS_REVOKED = "sessions-revoked"
    DATA_CLAIMED = "data-claimed"
    USER_DELETE_STARTED = "user-delete-started"
    USER_DELETED = "user-deleted"


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the audit log: what happened, to which account, who did it, from where."""

    event: AuditEvent
    username: str = ""  # the account concerned (the name given, for a failed sign-in)
    actor: str = ""  # who did it, when not the account itself ("operator" for the CLI)
    client_ip: str = ""
    detail: str = ""
    at: datetime | None = None
    id: int | None = None


@dataclass(frozen=True, slots=True)
class ClaimCounts:
    """What ``users claim`` moved from the local operator to a user."""

    conversations: int = 0
    runs: int = 0
    idempotency_keys: int = 0
    idempotency_dropped: int = 0  # the user already had a record under the same key
    sessions: int = 0


@dataclass(frozen=True, slots=True)
class PurgeCounts:
    """What deleting an account removed beside its conversations (counts only)."""

    memories: int = 0
    sessions: int = 0
    keys: int = 0
    idempotency_keys: int = 0
    account: bool = False  # the account row went in this call (not in a concurrent one)


def normalize_username(name: str) -> str:
    return name.strip().lower()


def is_username(name: str) -> bool:
    return USERNAME.fullmatch(name) is not None
