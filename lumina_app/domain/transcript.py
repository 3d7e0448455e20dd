"""A conversation as an OpenAI-style client saw it: its questions and the final text of
each answer, in order. The gateway matches a re-sent history against this, not against the
stored rows, which also hold tool rows, replaced (superseded) and failed answers."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from lumina_app.domain.types import MessageStatus, Msg, MsgRole

# An answer a client was shown whole: finished, or stopped with the text it had.
SHOWN_ANSWER = (MessageStatus.COMPLETE, MessageStatus.STOPPED)


@dataclass(frozen=True, slots=True)
class Line:
    """One message of a transcript: ``user`` or ``assistant`` and its text. ``files``: it
    carries images or files (then its text may be empty); not part of what it equals."""

    role: str
    text: str
    files: bool = field(default=False, compare=False)


def visible(msgs: Iterable[Msg]) -> list[Line]:
    """Questions and shown answers in seq order. The answer rows of one turn (a tool
    round splits an answer into the row that asked and the one that went on) make one
    line: the client got their text as one reply."""
    raw: list[list[str]] = []  # [role, text], texts of one answer joined before stripping
    answer_turn: str | None = None
    for msg in sorted(msgs, key=lambda m: m.seq):
        if msg.role is MsgRole.USER:
            raw.append(["user", msg.content])
            answer_turn = None
        elif msg.role is MsgRole.ASSISTANT and msg.status in SHOWN_ANSWER:
            if answer_turn is not None and answer_turn == msg.turn_id:
                raw[-1][1] += msg.content
            else:
                raw.append(["assistant", msg.content])
                answer_turn = msg.turn_id
    return [Line(role, text.strip()) for role, text in raw]


def opening_hash(first_question: str) -> str:
    """What indexes a conversation for matching: the sha256 of its first question."""
    return hashlib.sha256(first_question.strip().encode()).hexdigest()


def longest_prefix(stored: dict[str, list[Line]], earlier: list[Line]) -> tuple[str, int] | None:
    """The stored transcript that is the longest non-empty prefix of ``earlier`` (ties: the
    first given, i.e. the most recent): its key and length; None if none is."""
    best: tuple[str, int] | None = None
    for key, lines in stored.items():
        size = len(lines)
        longer = best is None or size > best[1]
        if longer and 0 < size <= len(earlier) and lines == earlier[:size]:
            best = (key, size)
    return best
