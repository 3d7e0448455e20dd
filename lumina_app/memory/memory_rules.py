"""What holds for every long-term memory, whoever writes it (#27, #43): how a fact is
checked and compared, how an id from outside is read, what a run is told, and which
memories are the person's alone (pinned, or added by hand: an agent may not change them).
Pure functions over ``domain.memories``; the store is ``memory/long_term.py``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from lumina_app.domain import AccessDenied, InvalidInput
from lumina_app.domain.memories import MAX_MEMORY_CHARS, Memory, MemoryNotFound

CONTEXT_PREFIX = "What you know about this person:"
# What a memory learnt in a conversation says once that conversation (or the message it
# came from) is deleted: it is kept, unlinked, with this mark (docs/API.md).
SOURCE_DELETED = "learnt in a conversation since deleted"


class MemoryProtected(AccessDenied):
    """An agent (a memory tool, an MCP client, the extractor) asked to change or forget a
    memory only the person may change: a pinned one, or one they added by hand."""

    def __init__(self, memory: Memory, why: str) -> None:
        super().__init__(
            f"memory {memory.id} is {why}: only the person can change or forget it "
            "(on the Memory page)"
        )
        self.memory_id = memory.id


def added_by_hand(memory: Memory) -> bool:
    """Written by the person (the Memory page, ``POST /api/v1/memories``, their own edit
    that replaced a fact): no conversation it was learnt in, no other origin."""
    return memory.conversation_uuid is None and memory.origin is None


def check_agent_may_change(memory: Memory) -> None:
    """MemoryProtected if ``memory`` is pinned or was added by hand (#43)."""
    if memory.pinned:
        raise MemoryProtected(memory, "pinned")
    if added_by_hand(memory):
        raise MemoryProtected(memory, "one the person added by hand")


def normalised(text: str) -> str:
    """A fact as compared for duplicates: case, spacing and the final stop ignored."""
    return " ".join(text.casefold().split()).rstrip(".!;, ")


def checked_text(text: str) -> str:
    """A memory's text as stored, or InvalidInput saying what is wrong with it."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("a memory needs some text")
    if "\x00" in text:
        raise InvalidInput("a memory must not contain NUL characters")
    flat = " ".join(text.split())
    if len(flat) > MAX_MEMORY_CHARS:
        raise InvalidInput(f"a memory is limited to {MAX_MEMORY_CHARS} characters")
    return flat


def context_message(memories: Sequence[Memory]) -> str:
    """The system message a run gets: one ``- fact`` line per memory, in the given order."""
    if not memories:
        return ""
    return "\n".join([CONTEXT_PREFIX, *(f"- {m.text}" for m in memories)])


_ID = re.compile(r"[0-9]{1,18}")


def memory_id(raw: object) -> int:
    """A memory id from outside (a path, a tool argument); anything else is not found."""
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 < raw < 10**18:
        return raw
    if isinstance(raw, str) and _ID.fullmatch(raw) and int(raw) > 0:
        return int(raw)
    raise MemoryNotFound(raw)
