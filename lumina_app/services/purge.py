"""Deleting conversations in bulk with every part of each (an account's, retention's): the
one per-conversation delete path, a batch at a time.

Per batch: the archive folders go first (a file can be removed again, a row cannot be
found again once gone), then every row of the batch in one SQL transaction, then each
conversation's hot key, run buffers, warm sessions, acp folders and idempotency records
(the memory layer's delete hooks). Interrupted, a rerun picks up the rest: each batch is
read again from SQL.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime

from lumina_app.archive.service import ArchiveService
from lumina_app.domain import ConversationInfo
from lumina_app.memory import MemoryManager
from lumina_app.memory.conversation_reads import ConversationReads

BATCH = 50

AfterBatch = Callable[[Sequence[ConversationInfo]], Awaitable[None]]


@dataclass(slots=True)
class Purged:
    conversations: int = 0
    messages: int = 0
    runs: int = 0


@dataclass(eq=False, repr=False)
class ConversationPurge:
    memory: MemoryManager
    reads: ConversationReads
    archive: ArchiveService
    _: KW_ONLY
    batch: int = BATCH
    # tests interrupt a purge here
    after_batch: AfterBatch | None = field(default=None, init=False)

    async def drain(
        self,
        *,
        owner: str | None = None,
        agent_id: str | None = None,
        updated_before: datetime | None = None,
    ) -> Purged:
        """Delete every conversation matching, batch by batch, until none is left."""
        purged = Purged()
        while batch := await self.reads.batch(
            owner=owner, agent_id=agent_id, updated_before=updated_before, limit=self.batch
        ):
            for conversation in batch:
                await self.archive.remove(conversation)
            purged.runs += len(await self.memory.delete_many(batch))
            purged.conversations += len(batch)
            purged.messages += sum(c.message_count for c in batch)
            if self.after_batch is not None:
                await self.after_batch(batch)
        return purged
