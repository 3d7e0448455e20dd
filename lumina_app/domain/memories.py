"""Long-term memories: short facts about a person (the owner) an agent keeps across
conversations. Pure types; the store is ``memory/long_term.py``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from lumina_app.domain.errors import NotFound

MAX_MEMORY_CHARS = 500


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"  # replaced by a newer fact (``superseded_by``)
    DELETED = "deleted"  # forgotten: never used again


class MemoryNotFound(NotFound):
    """Someone else's memory id, a deleted row and a missing id all look the same."""

    def __init__(self, memory_id: object) -> None:
        super().__init__(f"memory {memory_id!r} not found")


@dataclass(frozen=True, slots=True)
class Memory:
    id: int
    owner: str
    agent_id: str
    text: str
    status: MemoryStatus
    pinned: bool
    conversation_uuid: str | None  # the conversation's uuid it came from, if any
    seq: int | None  # the message it came from
    created_at: datetime
    updated_at: datetime
    superseded_by: int | None = None  # the newer memory that replaced it ("replacedBy")
    # When it became true (was learnt) and when a newer fact replaced it (None: current).
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    # Who added it when no conversation did: "added over MCP by <client>" (#46); None: by
    # hand on the Memory page or the REST API, or learnt from ``conversation_uuid``.
    origin: str | None = None

    @property
    def current(self) -> bool:
        return self.status is MemoryStatus.ACTIVE and self.valid_until is None
