"""What a full-text search is made of: the words of a query, and a matching message."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from lumina_app.domain.types import MsgRole

MAX_TERMS = 16
# A recall question (the routes, the ``recall`` tool, auto-recall): a person's question is
# often long. Plain search keeps its own, shorter limit (services/search.py).
MAX_RECALL_CHARS = 2000
_WORD = re.compile(r"\w+", re.UNICODE)
# Scripts written without spaces between words (CJK ideographs, kana, Thai, Lao, Khmer,
# Myanmar; Hangul too, whose particles attach to words): no full-text index here splits
# them into words, so a search looks for such a word inside the text.
UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f]"
)


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


@dataclass(frozen=True, slots=True)
class FileTextMatch:
    """A message that carries a file whose text holds the words."""

    conversation_uuid: str
    conversation_title: str
    conversation_pk: int
    message_id: int
    seq: int
    role: MsgRole
    created_at: datetime
    file_id: str
    file_name: str
    text: str


QUESTION_WORDS = 4  # this many words or more, or a "?", reads as a question


def is_question(query: str) -> bool:
    """Whether a search box's text reads as a question ("when did I mention the zebra
    code?") rather than words to look up: a question is ranked by relevance (recall),
    a few words are found word for word (search)."""
    text = query.strip()
    return text.endswith("?") or len(_WORD.findall(text)) >= QUESTION_WORDS


def terms(query: str) -> list[str]:
    """The words of a query, lower-cased, at most MAX_TERMS, each once."""
    found: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word not in found:
            found.append(word)
    return found[:MAX_TERMS]
