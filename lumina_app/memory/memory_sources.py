"""Memories whose source is deleted (#43): what was learnt in a conversation, or from one
of its messages, stays when that is deleted — the person sees and forgets it on the Memory
page — unlinked (no conversation, no seq) and marked :data:`SOURCE_DELETED`. Registered on
``MemoryManager``'s delete hooks (composition.py), so every door's delete, retention and
an account's deletion do it."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from lumina_app.domain import ConversationInfo
from lumina_app.memory.memory_rules import SOURCE_DELETED
from lumina_app.storage.sql import memories as rows
from lumina_app.storage.sql.database import SQLDatabase

log = logging.getLogger(__name__)


class DeletedSources:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def conversation_deleted(self, conversation: ConversationInfo) -> None:
        """Every memory learnt in the conversation."""
        await self._unlink(conversation, None)

    async def rows_removed(self, conversation: ConversationInfo, _turns: Sequence[str]) -> None:
        """Messages were deleted: the memories learnt from a question no longer there."""
        if conversation.id is not None:
            await self._unlink(conversation, conversation.id)

    async def _unlink(self, conversation: ConversationInfo, pk: int | None) -> None:
        """Never raises: the hooks after it (an ACP agent's files) must run all the same."""
        try:
            await rows.source_deleted(
                self.db,
                owner=conversation.owner,
                conversation_uuid=conversation.uuid,
                origin=SOURCE_DELETED,
                conversation_pk=pk,
            )
        except Exception:
            log.warning("memories of %s not marked as from a deleted source",
                        conversation.uuid, exc_info=True)  # fmt: skip
