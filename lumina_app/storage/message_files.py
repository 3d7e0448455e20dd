"""The contract of the files messages carry (``sql.message_files.MessageFileStore``): which
of an owner's files a send names, and the links from a question to its files, by
conversation and seq (docs/FILES.md, "Files on messages")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.files import StoredFile


class MessageFiles(Protocol):
    async def owned(self, owner: str, file_ids: Sequence[str]) -> list[StoredFile]:
        """The owner's files among ``file_ids`` (another owner's or unknown ids are absent)."""

    async def link(
        self, owner: str, conversation_pk: ConversationPk, seq: int, file_ids: Sequence[str]
    ) -> int:
        """Link the message at ``seq`` to the owner's files, in the order given; a file
        deleted since (or a conversation deleted since) links nothing. How many linked."""
