"""Vectors written in the background: a message is embedded after it is final, never on
an answer's path. Failures are logged and retried; ``backfill`` embeds existing history."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import TypeVar

import numpy as np
from sqlalchemy.exc import SQLAlchemyError

from lumina_app.domain import ConversationInfo, Msg, StoreUnavailable
from lumina_app.domain.ids import ConversationPk
from lumina_app.recall.embedders import (
    MAX_INPUT_CHARS,
    Embedder,
    EmbedderChoice,
    EmbeddingError,
    normalised,
)
from lumina_app.recall.retriever import VECTOR_DTYPE
from lumina_app.storage.sql import recall_rows
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.recall_rows import PendingRow

log = logging.getLogger(__name__)
T = TypeVar("T")

BATCH = 64
RETRY_SECONDS = 5.0
# After a wake, how long the worker lets more conversations become due, so the turns that
# end together share one read, one embedding call and one write.
GATHER_SECONDS = 0.05


def unit_vectors(embedder_rows: np.ndarray, with_previous: np.ndarray) -> np.ndarray:
    """A message's stored vector: its own and with the message before, summed, normalised."""
    return normalised(embedder_rows + with_previous)


class EmbedWorker:
    """Embeds the recalled rows that have no vector of the embedder's model yet."""

    def __init__(
        self,
        db: SQLDatabase,
        embedder: Embedder,
        *,
        retry_seconds: float = RETRY_SECONDS,
        choice: EmbedderChoice | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.choice = choice  # the agents' own embedders (config.json "embeddings")
        self.retry_seconds = retry_seconds
        self._due: set[ConversationPk] = set()  # whole conversations
        self._due_turns: dict[ConversationPk, set[str]] = {}  # only these turns' rows
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
        """``WriteHooks.on_final`` hook: the conversation has new final rows. Looked for
        by their turns (the question shares its answer's turn), not by reading the whole
        conversation for rows without a vector: that grew with every turn of a long one."""
        turns = {m.turn_id for m in msgs}
        if not msgs or "" in turns:
            self.due(conversation.id)
            return
        self._due_turns.setdefault(conversation.id, set()).update(turns)
        self._wake.set()

    def due(self, conversation_pk: ConversationPk) -> None:
        """Embed this conversation's rows that have no vector (new, imported, forked)."""
        self._due.add(conversation_pk)
        self._wake.set()

    async def run_forever(self) -> None:
        while True:
            await self._wake.wait()
            await asyncio.sleep(GATHER_SECONDS)  # turns ending together: one batch
            self._wake.clear()
            due, self._due = self._due, set()
            turns, self._due_turns = self._due_turns, {}
            failed = await self._finishing(self.embed_due(due, turns))
            if failed:  # what arrived meanwhile waits with them; it is due anyway
                self._due |= failed
                await asyncio.sleep(self.retry_seconds)
                self._wake.set()

    async def _finishing(self, work: Awaitable[T]) -> T:
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

    async def embed_due(
        self,
        conversation_pks: Collection[ConversationPk],
        turns: Mapping[ConversationPk, Collection[str]] | None = None,
    ) -> set[int]:
        """Embed the rows that have no vector of these conversations (whole), and of these
        turns of others; one batch per embedder and scope (the conversations' agents read
        at once): the conversations that failed, to retry whole."""
        turns = {pk: t for pk, t in (turns or {}).items() if pk not in conversation_pks}
        if not conversation_pks and not turns:
            return set()
        try:
            agents = await recall_rows.agents_of(self.db, {*conversation_pks, *turns})
        except (StoreUnavailable, SQLAlchemyError, OSError) as exc:
            everything = sorted({*conversation_pks, *turns})
            log.warning("embedding conversations %s failed, retrying: %s", everything, exc)
            return set(everything)
        by_embedder: dict[int, tuple[Embedder, list[ConversationPk]]] = {}
        for conversation_pk, agent_id in sorted(agents.items()):
            embedder = self.choice.for_agent(agent_id) if self.choice else self.embedder
            if embedder is not None:  # None: the agent's embeddings are off
                by_embedder.setdefault(id(embedder), (embedder, []))[1].append(conversation_pk)
        failed: set[int] = set()
        for embedder, pks in by_embedder.values():
            whole = [pk for pk in pks if pk not in turns]
            some = [pk for pk in pks if pk in turns]
            try:
                if whole:
                    await self._embed(embedder, conversation_pks=whole)
                if some:
                    their_turns = {t for pk in some for t in turns[pk]}
                    await self._embed(embedder, conversation_pks=some, turns=their_turns)
            except (EmbeddingError, StoreUnavailable, SQLAlchemyError, OSError) as exc:
                log.warning("embedding conversations %s failed, retrying: %s", pks, exc)
                failed.update(pks)
        return failed

    async def embed_pending(self) -> int:
        """Embed everything that has no vector of its agent's embedder yet (the backfill of
        ``python -m lumina_app embed``): the count written."""
        own = self.choice.own() if self.choice else {}
        written = await self._embed(self.embedder, not_agents=list(own))
        for agent_id, embedder in own.items():
            if embedder is not None:
                written += await self._embed(embedder, agents=[agent_id])
        return written

    async def _embed(self, embedder: Embedder, **scope: object) -> int:
        written = 0
        while not self._stopping and (
            rows := await recall_rows.pending(
                self.db,
                embedder.name,
                limit=BATCH,
                chars=MAX_INPUT_CHARS,
                dimension=embedder.dimension,
                **scope,  # type: ignore[arg-type]
            )
        ):
            await self._write(embedder, rows)
            written += len(rows)
            for listener in self.listeners:
                listener(written)
            if len(rows) < BATCH:
                break  # that was all; a row committed since has marked its conversation due
        return written

    async def _write(self, embedder: Embedder, rows: Sequence[PendingRow]) -> None:
        texts = [r.content for r in rows]
        texts += [f"{r.previous}\n{r.content}" if r.previous else r.content for r in rows]
        # One call, each distinct text once: a conversation's first message has nothing
        # before it, so both of its texts are the same.
        distinct = list(dict.fromkeys(texts))
        found = await embedder.embed(distinct)
        at = {text: i for i, text in enumerate(distinct)}
        embedded = found[[at[t] for t in texts]]
        alone, with_previous = embedded[: len(rows)], embedded[len(rows) :]
        vectors = unit_vectors(alone, with_previous).astype(VECTOR_DTYPE)
        await recall_rows.write_vectors(
            self.db,
            embedder.name,
            [
                (r.message_id, r.conversation_pk, v.tobytes())
                for r, v in zip(rows, vectors, strict=True)
            ],
        )
