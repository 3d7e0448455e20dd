"""Vectors written in the background: a message is embedded after it is final, never on
an answer's path. Failures are logged and retried; ``backfill`` embeds existing history."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

import numpy as np
from sqlalchemy.exc import SQLAlchemyError

from lumina_app.domain import ConversationInfo, Msg, StoreUnavailable
from lumina_app.domain.ids import ConversationPk
from lumina_app.recall.embedders import MAX_INPUT_CHARS, Embedder, EmbeddingError
from lumina_app.recall.retriever import VECTOR_DTYPE
from lumina_app.storage.sql import recall_rows
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.recall_rows import PendingRow

log = logging.getLogger(__name__)

BATCH = 64
RETRY_SECONDS = 5.0


def unit_vectors(embedder_rows: np.ndarray, with_previous: np.ndarray) -> np.ndarray:
    """A message's stored vector: its own and with the message before, summed, normalised."""
    mixed = embedder_rows + with_previous
    norms = np.linalg.norm(mixed, axis=1, keepdims=True)
    return mixed / np.where(norms == 0, 1, norms)


class EmbedWorker:
    """Embeds the recalled rows that have no vector of the embedder's model yet."""

    def __init__(
        self, db: SQLDatabase, embedder: Embedder, *, retry_seconds: float = RETRY_SECONDS
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.retry_seconds = retry_seconds
        self._due: set[int] = set()
        self._wake = asyncio.Event()
        self._stopping = False
        self.listeners: list[Callable[[int], None]] = []  # vectors written (tests, metrics)

    async def warm(self) -> None:
        """Load the embedder before the first request needs it (the server, at start)."""
        try:
            await self.embedder.warm()
        except (EmbeddingError, OSError, ValueError) as exc:  # loaded on first use instead
            log.warning("the embedder did not load at start: %s", exc)

    async def on_final(self, conversation: ConversationInfo, msgs: Sequence[Msg]) -> None:
        """``MemoryManager.on_final`` hook: the conversation has new final rows."""
        self.due(conversation.id)

    def due(self, conversation_pk: ConversationPk) -> None:
        """Embed this conversation's rows that have no vector (new, imported, forked)."""
        self._due.add(conversation_pk)
        self._wake.set()

    async def run_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            due, self._due = self._due, set()
            for conversation_pk in sorted(due):
                try:
                    await self._finishing(self.embed_pending(conversation_pk))
                except (EmbeddingError, StoreUnavailable, SQLAlchemyError, OSError) as exc:
                    log.warning("embedding conversation %s failed, retrying: %s",
                                conversation_pk, exc)  # fmt: skip
                    self._due.add(conversation_pk)
            if self._due:
                await asyncio.sleep(self.retry_seconds)
                self._wake.set()

    async def _finishing(self, work: Awaitable[int]) -> int:
        """Run ``work``; cancelled (shutdown), let its batch land first: a write running in
        a thread cannot be cut short, and must not outlive the services."""
        job = asyncio.ensure_future(work)
        try:
            return await asyncio.shield(job)
        except asyncio.CancelledError:
            self._stopping = True
            await asyncio.wait([job])
            if not job.cancelled() and job.exception():
                log.warning("embedding at shutdown failed: %s", job.exception())
            raise

    async def embed_pending(self, conversation_pk: ConversationPk | None = None) -> int:
        """Embed what has no vector yet (one conversation, or all): the count written."""
        written = 0
        while not self._stopping and (
            rows := await recall_rows.pending(
                self.db,
                self.embedder.name,
                conversation_pk=conversation_pk,
                limit=BATCH,
                chars=MAX_INPUT_CHARS,
            )
        ):
            await self._write(rows)
            written += len(rows)
            for listener in self.listeners:
                listener(written)
        return written

    async def _write(self, rows: Sequence[PendingRow]) -> None:
        alone = await self.embedder.embed([r.content for r in rows])
        with_previous = await self.embedder.embed(
            [f"{r.previous}\n{r.content}" if r.previous else r.content for r in rows]
        )
        vectors = unit_vectors(alone, with_previous).astype(VECTOR_DTYPE)
        await recall_rows.write_vectors(
            self.db,
            self.embedder.name,
            [
                (r.message_id, r.conversation_pk, v.tobytes())
                for r, v in zip(rows, vectors, strict=True)
            ],
        )
