"""What a full-text search is made of: the words of a query, and a matching message."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from lumina_app.domain.types import MsgRole

MAX_TERMS = 16
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class MessageHit:
    conversation_uuid: str
    conversation_title: str
    message_id: int
    seq: int
    role: MsgRole
    content: str
    score: float
    created_at: datetime


def terms(query: str) -> list[str]:
    """The words of a query, lower-cased, at most MAX_TERMS, each once."""
    found: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word not in found:
            found.append(word)
    return found[:MAX_TERMS]
