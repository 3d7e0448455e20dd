"""Users' API keys: ``lum_`` and 32 random bytes (URL-safe base64), of which the store keeps
a SHA-256 and the first characters (to tell keys apart in lists), never the key.

Why SHA-256 and not Argon2 as for passwords: a key carries 256 bits from ``secrets``, so
there is nothing to guess and nothing for a slow hash to protect, while a fast hash lets
every request find its key by an indexed lookup of the digest (a salted slow hash could not
be looked up at all, only compared against every key in turn).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from lumina_app.domain import ApiKeyInfo, InvalidInput
from lumina_app.domain.accounts import MAX_KEY_NAME_CHARS
from lumina_app.storage.api_keys import ApiKeyRecords

KEY_MARK = "lum_"
SHOWN_CHARS = 12  # "lum_" and the first 8 random characters
MAX_KEYS_PER_USER = 50


@dataclass(frozen=True, slots=True)
class NewKey:
    key: str  # shown once, to whoever created it
    prefix: str
    digest: str


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_api_key() -> NewKey:
    key = KEY_MARK + secrets.token_urlsafe(32)
    return NewKey(key=key, prefix=key[:SHOWN_CHARS], digest=key_digest(key))


async def issue_key(store: ApiKeyRecords, *, user_id: int, name: str) -> tuple[str, ApiKeyInfo]:
    """A new key for an account: ``(the key, shown once; what lists show)``."""
    name = " ".join(name.split())
    if not name or len(name) > MAX_KEY_NAME_CHARS:
        raise InvalidInput(f"a key needs a name of 1 to {MAX_KEY_NAME_CHARS} characters")
    if len(await store.list(user_id=user_id)) >= MAX_KEYS_PER_USER:
        raise InvalidInput(f"an account may have at most {MAX_KEYS_PER_USER} live keys")
    made = new_api_key()
    info = await store.create(user_id=user_id, name=name, prefix=made.prefix, key_hash=made.digest)
    return made.key, info
