"""Long-term memory: short facts about a person kept across conversations (issue #27).

Stored in SQL (``storage/sql/memories.py``), always scoped to an owner: another owner's
memory is not found, whatever the id. A search ranks memories the way recall ranks
messages (``recall/retriever.py``: BM25 fused with the embedder's cosine by reciprocal
rank), each memory one retrieval unit. Writing the same fact twice keeps one memory.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence

import numpy as np

from lumina_app.domain import InvalidInput, MsgRole
from lumina_app.domain.memories import MAX_MEMORY_CHARS, Memory, MemoryNotFound, MemoryStatus
from lumina_app.domain.tokens import estimate_text
from lumina_app.recall.embedders import Embedder, EmbeddingError
from lumina_app.recall.retriever import (
    LEXICAL_WEIGHT,
    SEMANTIC_WEIGHT,
    VECTOR_DTYPE,
    UnitIndex,
    Units,
)
from lumina_app.storage.sql import memories as rows
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.recall_rows import RecallRow

log = logging.getLogger(__name__)

CONTEXT_PREFIX = "What you know about this person:"
_ALONE = Units(previous=False, date=False)  # a memory means what it says, on its own


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


class LongTermMemory:
    """Store, edit and search an owner's memories. ``agent_id`` None in a read means every
    agent of the owner (an agent with ``"longTerm": {"scope": "owner"}``)."""

    def __init__(
        self, db: SQLDatabase, embedder: Embedder | None, *, cache_size: int = 256
    ) -> None:
        self.db = db
        self.embedder = embedder
        # (owner, agent) → (version, active memories newest first, their index)
        self._cache: OrderedDict[tuple, tuple[tuple, list[Memory], UnitIndex]] = OrderedDict()
        self._cache_size = cache_size
        self.written = 0
        self.superseded = 0
        self.updated = 0
        # Called with "written", "updated" or "superseded" after each change (the metrics).
        self.on_changed: list[Callable[[str], None]] = []

    @property
    def model(self) -> str:
        return self.embedder.name if self.embedder else ""

    # -- reads ------------------------------------------------------------------------

    async def get(self, owner: str, memory_id: int) -> Memory:
        """The owner's memory (not a deleted one), else MemoryNotFound."""
        found = await rows.get(self.db, memory_id, owner=owner)
        if found is None or found.status is MemoryStatus.DELETED:
            raise MemoryNotFound(memory_id)
        return found

    async def listing(
        self,
        owner: str,
        *,
        agent_id: str | None = None,
        statuses: Collection[MemoryStatus] = (MemoryStatus.ACTIVE,),
        limit: int = 200,
    ) -> list[Memory]:
        return await rows.listing(
            self.db, owner=owner, agent_id=agent_id, statuses=statuses, limit=limit
        )

    async def by_ids(self, owner: str, ids: Sequence[int]) -> list[Memory]:
        return await rows.by_ids(self.db, ids, owner=owner)

    async def search(
        self, owner: str, query: str, *, agent_id: str | None = None, limit: int = 10
    ) -> list[tuple[Memory, float]]:
        """The active memories most relevant to ``query``, best first, with their score."""
        active, index = await self._index(owner, agent_id)
        return await self._ranked(active, index, query, limit)

    async def _ranked(
        self, active: list[Memory], index: UnitIndex, query: str, limit: int
    ) -> list[tuple[Memory, float]]:
        if not active or not query.strip():
            return []
        vector = await self._vector(query)
        minimum = self.embedder.min_similarity if self.embedder else 0.0
        allowed = np.ones(len(active), dtype=bool)
        ranked = index.ranked(query, vector, (LEXICAL_WEIGHT, SEMANTIC_WEIGHT), allowed, minimum)
        return [(active[i], round(score, 6)) for i, score in ranked[:limit]]

    async def _index(self, owner: str, agent_id: str | None) -> tuple[list[Memory], UnitIndex]:
        """The owner's active memories (pinned, then newest first) and their retrieval
        index, built once and kept while nothing about them changes (one aggregate read)."""
        key = (owner, agent_id)
        version = (*await rows.version(self.db, owner=owner, agent_id=agent_id), self.model)
        cached = self._cache.get(key)
        if cached and cached[0] == version:
            self._cache.move_to_end(key)
            return cached[1], cached[2]
        found = await rows.with_vectors(self.db, owner=owner, agent_id=agent_id, model=self.model)
        found.sort(key=lambda mv: (mv[0].pinned, mv[0].updated_at, mv[0].id), reverse=True)
        active = [m for m, _ in found]
        units = [
            RecallRow(m.id, 0, i, MsgRole.USER, m.text, m.created_at, v)
            for i, (m, v) in enumerate(found)
        ]
        index = UnitIndex(units, _ALONE, previous=[""] * len(units))
        self._cache[key] = (version, active, index)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return active, index

    async def for_context(
        self, owner: str, query: str, *, agent_id: str | None, tokens: int, limit: int
    ) -> list[Memory]:
        """What goes into a run: pinned memories, then the most relevant to ``query``, then
        the newest others, while they fit ``tokens`` and ``limit``."""
        active, index = await self._index(owner, agent_id)
        if not active:
            return []
        ranked = [m for m, _ in await self._ranked(active, index, query, limit)]
        pinned = [m for m in active if m.pinned]
        order = list({m.id: m for m in [*pinned, *ranked, *active]}.values())
        kept, used = [], estimate_text(CONTEXT_PREFIX)
        for memory in order:
            if len(kept) >= limit:
                break
            cost = estimate_text(memory.text) + 2
            if used + cost > tokens:
                continue  # a shorter one further on may still fit
            kept.append(memory)
            used += cost
        return kept

    async def find_same(self, owner: str, agent_id: str | None, text: str) -> Memory | None:
        """An active memory saying the same thing (a duplicate), if any."""
        wanted = normalised(text)
        for memory in await self.listing(owner, agent_id=agent_id, limit=500):
            if normalised(memory.text) == wanted:
                return memory
        return None

    # -- writes -----------------------------------------------------------------------

    async def add(
        self,
        owner: str,
        agent_id: str,
        text: str,
        *,
        scope_agent: str | None = None,
        conversation_uuid: str | None = None,
        seq: int | None = None,
        pinned: bool = False,
    ) -> tuple[Memory, bool]:
        """(the memory, whether it is new): the same fact already known is not kept twice.
        ``scope_agent``: where duplicates are looked for (the agent, or None: the owner's)."""
        text = checked_text(text)
        same = await self.find_same(owner, scope_agent, text)
        if same is not None:
            return same, False
        model, vector = await self._embedded(text)
        memory = await rows.insert(
            self.db,
            owner=owner,
            agent_id=agent_id,
            text=text,
            pinned=pinned,
            conversation_uuid=conversation_uuid,
            seq=seq,
            model=model,
            vector=vector,
        )
        self.written += 1
        self._changed("written")
        return memory, True

    async def edit(
        self, owner: str, memory_id: int, *, text: str | None = None, pinned: bool | None = None
    ) -> Memory:
        """Change a memory's text or pin in place; MemoryNotFound if it is not the owner's."""
        current = await self.get(owner, memory_id)
        model, vector = (None, None)
        if text is not None:
            text = checked_text(text)
            if text == current.text:
                text = None
            else:
                model, vector = await self._embedded(text)
        if text is None and pinned is None:
            return current
        changed = await rows.update(
            self.db, memory_id, owner=owner, text=text, pinned=pinned, model=model, vector=vector
        )
        if not changed:
            raise MemoryNotFound(memory_id)
        if text is not None:
            self.updated += 1
            self._changed("updated")
        return await self.get(owner, memory_id)

    async def supersede(
        self,
        owner: str,
        memory_id: int,
        text: str,
        *,
        agent_id: str,
        conversation_uuid: str | None = None,
        seq: int | None = None,
    ) -> Memory:
        """A new fact replacing an active one (which stays, ``superseded``, for the record)."""
        text = checked_text(text)
        model, vector = await self._embedded(text)
        memory = await rows.supersede(
            self.db,
            memory_id,
            owner=owner,
            agent_id=agent_id,
            text=text,
            pinned=False,
            conversation_uuid=conversation_uuid,
            seq=seq,
            model=model,
            vector=vector,
        )
        if memory is None:
            raise MemoryNotFound(memory_id)
        self.superseded += 1
        self._changed("superseded")
        return memory

    def _changed(self, change: str) -> None:
        for hook in self.on_changed:
            hook(change)

    async def forget(self, owner: str, memory_id: int) -> None:
        """Never used again: the memory is marked ``deleted``."""
        if not await rows.update(self.db, memory_id, owner=owner, status=MemoryStatus.DELETED):
            raise MemoryNotFound(memory_id)

    async def forget_all(self, owner: str, *, agent_id: str | None = None) -> int:
        return await rows.forget_all(self.db, owner=owner, agent_id=agent_id)

    # -- embeddings -------------------------------------------------------------------

    async def _embedded(self, text: str) -> tuple[str | None, bytes | None]:
        """(model, float16 vector) of ``text``; none when the embedder is off or failing
        (the memory is then found by its words alone)."""
        if self.embedder is None:
            return None, None
        try:
            vector = (await self.embedder.embed([text]))[0]
        except EmbeddingError as exc:
            log.warning("memory stored without an embedding: %s", exc)
            return None, None
        return self.model, np.asarray(vector, dtype=VECTOR_DTYPE).tobytes()

    async def _vector(self, query: str) -> np.ndarray | None:
        if self.embedder is None:
            return None
        try:
            vector = self.embedder.embed_query(query)
            return vector if vector is not None else (await self.embedder.embed([query]))[0]
        except EmbeddingError as exc:
            log.warning("memory search without embeddings: %s", exc)
            return None


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
