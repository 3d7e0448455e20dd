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

KEY_MARK = "lum_"
SHOWN_CHARS = 12  # "lum_" and the first 8 random characters


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
