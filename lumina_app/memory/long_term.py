"""Long-term memory: short facts about a person kept across conversations (issue #27).

Stored in SQL (``storage/sql/memories.py``), always scoped to an owner: another owner's
memory is not found, whatever the id. A search ranks memories the way recall ranks
messages (``recall/retriever.py``: BM25 fused with the embedder's cosine by reciprocal
rank), each memory one retrieval unit. Writing the same fact twice keeps one memory.

Facts change over time (#42): a newer statement about the same thing does not overwrite
the old one. :meth:`LongTermMemory.supersede` closes it (``valid_until`` = now,
``superseded_by`` = the new id) and adds a current memory (``valid_from`` = now); searches
and contexts see current memories only, :meth:`LongTermMemory.history` the whole chain.

At scale (#43): an owner keeps at most ``max_per_owner`` memories (:meth:`check_room`, on
every path that makes one); a scope's index is built by one lookup at a time, on threads
of its own. Which memories only the person may change: ``memory_rules.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from lumina_app.domain import InvalidInput, QuotaExceeded
from lumina_app.domain.memories import Memory, MemoryNotFound, MemoryStatus
from lumina_app.domain.tokens import estimate_text
from lumina_app.domain.views import iso_ms
from lumina_app.memory.memory_index import MemoryIndex, thread_terms
from lumina_app.memory.memory_rules import CONTEXT_PREFIX as CONTEXT_PREFIX
from lumina_app.memory.memory_rules import check_agent_may_change, checked_text, normalised
from lumina_app.memory.memory_rules import context_message as context_message
from lumina_app.memory.memory_rules import memory_id as memory_id
from lumina_app.recall.embedders import Embedder, EmbeddingError, query_vector
from lumina_app.recall.retriever import LEXICAL_WEIGHT, SEMANTIC_WEIGHT, VECTOR_DTYPE
from lumina_app.storage.sql import memories as rows
from lumina_app.storage.sql.database import SQLDatabase

log = logging.getLogger(__name__)

# A change is read again when it is this close to the newest one an index holds: another
# process's write may commit a moment after a later one (its time is taken before its turn).
CHANGE_MARGIN = timedelta(seconds=1)
# An index taken changes in for this long is read whole again (what the margin can miss).
REBUILD_AFTER_S = 600.0
# Memories the cached indexes may hold in all, besides at most ``cache_size`` owners: a
# count of owners alone let 256 owners of 100,000 imported memories each hold ~25 GB. At
# ≤ 500 characters and one vector each, ~1.5 KB a memory: ~300 MB at most.
CACHE_MEMORIES = 200_000
# Indexes built at once, whoever's (#43): each on this pool's threads, never the loop's nor
# the default executor the rest of the server shares; one owner's concurrent cold turns
# share one build (``LongTermMemory._building``), so the peak is two indexes being made.
BUILD_THREADS = 2
_builds = ThreadPoolExecutor(BUILD_THREADS, thread_name_prefix="memory-index")
SETTING = "LUMINA_MAX_MEMORIES_PER_OWNER"


def _built(found: Sequence, model: str) -> MemoryIndex:
    """An index of :func:`rows.with_vectors`'s rows (on a build thread): decoded, split,
    its order taken once, so the loop's first ranking costs no sort."""
    index = MemoryIndex(rows.decoded(found, model), thread_terms)
    index.ordered()
    return index


@dataclass(slots=True)
class _Kept:
    version: tuple
    index: MemoryIndex
    built: float = field(default_factory=time.monotonic)

    def fresh(self, version: tuple) -> bool:
        """Whether changes may be taken in (same embedder, not too old to trust)."""
        return version[-1] == self.version[-1] and time.monotonic() - self.built < REBUILD_AFTER_S


def _slots(index: MemoryIndex) -> int:
    """The memories an index holds room for: the active ones and the slots of those gone."""
    return len(index) + index.dead


class LongTermMemory:
    """Store, edit and search an owner's memories. ``agent_id`` None in a read means every
    agent of the owner (an agent with ``"longTerm": {"scope": "owner"}``)."""

    def __init__(
        self,
        db: SQLDatabase,
        embedder: Embedder | None,
        *,
        cache_size: int = 256,
        cache_memories: int = CACHE_MEMORIES,
        max_per_owner: int = 0,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.max_per_owner = max_per_owner  # memories an owner may keep (0: no limit)
        # (owner, agent) → [its lock, how many hold or wait for it]: one build at a time
        self._building: dict[tuple, list] = {}
        # (owner, agent) → the index of its active memories and what it was read at
        self._cache: OrderedDict[tuple, _Kept] = OrderedDict()
        self._cache_size = cache_size
        self._cache_memories = cache_memories
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
        return await self._ranked(await self._index(owner, agent_id), query, limit)

    async def _ranked(
        self, index: MemoryIndex, query: str, limit: int
    ) -> list[tuple[Memory, float]]:
        if not len(index) or not query.strip():
            return []
        vector = await query_vector(self.embedder, query, "memory search")
        minimum = self.embedder.min_similarity if self.embedder else 0.0
        return index.ranked(query, vector, (LEXICAL_WEIGHT, SEMANTIC_WEIGHT), minimum)[:limit]

    @contextlib.asynccontextmanager
    async def _one_at_a_time(self, key: tuple) -> AsyncIterator[None]:
        """Held while a scope's index is checked or built: concurrent cold turns of one
        owner wait for the first one's build and then find it kept, instead of reading and
        building a copy each (4 copies of 100,000 memories took RSS to 1.7 GB)."""
        entry = self._building.get(key)
        if entry is None:
            entry = self._building[key] = [asyncio.Lock(), 0]
        entry[1] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1] -= 1
            if not entry[1]:
                del self._building[key]

    async def _index(self, owner: str, agent_id: str | None) -> MemoryIndex:
        """The owner's active memories, searchable: built once from one read (decoded and
        split on a build thread), then kept; a change since (seen by one aggregate read) is
        taken in by reading only the memories changed after the newest one the index holds.
        One scope's lookups go one at a time (the first cold one builds, the others wait)."""
        async with self._one_at_a_time((owner, agent_id)):
            return await self._current_index(owner, agent_id)

    async def _current_index(self, owner: str, agent_id: str | None) -> MemoryIndex:
        key = (owner, agent_id)
        version = (*await rows.version(self.db, owner=owner, agent_id=agent_id), self.model)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            if cached.version == version:
                return cached.index
            if cached.fresh(version) and (index := await self._caught_up(key, cached.index)):
                cached.version = version
                self._shrink()  # it may have grown
                return index
        found = await rows.with_vectors(self.db, owner=owner, agent_id=agent_id)
        index = await asyncio.get_running_loop().run_in_executor(_builds, _built, found, self.model)
        del found
        self._cache[key] = _Kept(version, index)
        self._shrink()
        return index

    def _shrink(self) -> None:
        """Drop the least recently used indexes until both bounds hold (an index alone
        over the memories' budget is not kept: it serves this read only)."""
        held = sum(_slots(kept.index) for kept in self._cache.values())
        while self._cache and (len(self._cache) > self._cache_size or held > self._cache_memories):
            _key, dropped = self._cache.popitem(last=False)
            held -= _slots(dropped.index)

    async def _caught_up(self, key: tuple, index: MemoryIndex) -> MemoryIndex | None:
        """``index`` with the changes since its newest memory (their ids and times read
        first, then only the rows it does not hold as they are), or None when they are so
        many that a fresh build is cheaper."""
        if index.newest is None:
            return None
        owner, agent_id = key
        stamps = await rows.stamps_since(
            self.db, owner=owner, agent_id=agent_id, since=index.newest - CHANGE_MARGIN
        )
        stale = [i for i, status, when in stamps if not index.holds(i, status, when)]
        if len(stale) > max(len(index), 64) // 2:
            return None
        index.apply(await rows.with_vectors_by_ids(self.db, stale, owner=owner, model=self.model))
        return index

    async def for_context(
        self, owner: str, query: str, *, agent_id: str | None, tokens: int, limit: int
    ) -> list[Memory]:
        """What goes into a run: pinned memories, then the most relevant to ``query``, then
        the newest others, while they fit ``tokens`` and ``limit``."""
        index = await self._index(owner, agent_id)
        if not len(index):
            return []
        ranked = [m for m, _ in await self._ranked(index, query, limit)]
        first = {m.id: m for m in [*index.pinned(), *ranked]}
        order = itertools.chain(first.values(), (m for m in index.ordered() if m.id not in first))
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

    async def check_room(self, owner: str, more: int = 1) -> None:
        """QuotaExceeded (a 429, a tool error) if keeping ``more`` memories would pass the
        owner's limit. Every way a memory is made comes through here (add, supersede, an
        archive's memory file); forgetting some makes room."""
        if not self.max_per_owner or more <= 0:
            return
        have = await rows.kept(self.db, owner=owner)
        if have + more > self.max_per_owner:
            raise QuotaExceeded(
                f"this owner keeps {have} memories (current ones and their history); "
                "forget some to keep more",
                setting=SETTING,
                limit=self.max_per_owner,
                retry_after=None,
            )

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
        origin: str | None = None,
    ) -> tuple[Memory, bool]:
        """(the memory, whether it is new): the same fact already known is not kept twice.
        ``scope_agent``: where duplicates are looked for (the agent, or None: the owner's)."""
        text = checked_text(text)
        same = await self.find_same(owner, scope_agent, text)
        if same is not None:
            return same, False
        await self.check_room(owner)
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
            origin=origin,
        )
        self._changed("written")
        return memory, True

    async def edit(
        self,
        owner: str,
        memory_id: int,
        *,
        text: str | None = None,
        pinned: bool | None = None,
        by_agent: bool = False,
    ) -> Memory:
        """Change a memory's text or pin in place; MemoryNotFound if it is not the owner's.
        ``by_agent``: an agent asks (MemoryProtected for a pinned or hand-written one)."""
        current = await self.get(owner, memory_id)
        if by_agent:
            check_agent_may_change(current)
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
            self._changed("updated")
        return await self.get(owner, memory_id)

    async def supersede(
        self,
        owner: str,
        memory_id: int,
        text: str,
        *,
        agent_id: str | None = None,
        conversation_uuid: str | None = None,
        seq: int | None = None,
        by_agent: bool = False,
    ) -> Memory:
        """A new fact replacing a current one, which stays as its history (``superseded``,
        valid until now); the same text again changes nothing. ``agent_id``: the new one's
        agent (default: the old one's). MemoryNotFound if it is not the owner's; InvalidInput
        if it was already replaced (only the current version is); ``by_agent``:
        MemoryProtected for a pinned or hand-written one."""
        text = checked_text(text)
        current = await self.get(owner, memory_id)
        if by_agent:
            check_agent_may_change(current)
        if not current.current:
            raise InvalidInput(
                f"memory {memory_id} was replaced by memory {current.superseded_by}: "
                "change the current one"
            )
        if normalised(text) == normalised(current.text):
            return current
        await self.check_room(owner)  # the old one stays, as history
        model, vector = await self._embedded(text)
        memory = await rows.supersede(
            self.db,
            memory_id,
            owner=owner,
            agent_id=agent_id or current.agent_id,
            text=text,
            pinned=False,
            conversation_uuid=conversation_uuid,
            seq=seq,
            model=model,
            vector=vector,
        )
        if memory is None:
            raise MemoryNotFound(memory_id)
        self._changed("superseded")
        return memory

    def _changed(self, change: str) -> None:
        for hook in self.on_changed:
            hook(change)

    async def forget(self, owner: str, memory_id: int, *, by_agent: bool = False) -> None:
        """Never used again: the memory is marked ``deleted``. Forgetting a current fact
        forgets its history too (what it used to be); forgetting an earlier version removes
        only that one from the history. ``by_agent``: as :meth:`edit`."""
        memory = await self.get(owner, memory_id)
        if by_agent:
            check_agent_may_change(memory)
        ids = [memory.id]
        if memory.current:
            ids += [m.id for m in (await rows.replaced(self.db, ids, owner=owner))[memory.id]]
        if not await rows.delete_many(self.db, ids, owner=owner):
            raise MemoryNotFound(memory_id)

    # -- history ------------------------------------------------------------------------

    async def earlier(self, owner: str, ids: Sequence[int]) -> dict[int, list[Memory]]:
        """For each of the owner's memories ``ids``: the versions it replaced, newest first."""
        return await rows.replaced(self.db, list(ids), owner=owner)

    async def history(self, owner: str, memory_id: int) -> list[Memory]:
        """The chain a memory belongs to, newest first: the version that is (or was last)
        current, then each it replaced, each with its ``valid_from``/``valid_until``."""
        await self.get(owner, memory_id)  # someone else's, or a deleted one: not found
        newest = await rows.newest_of(self.db, memory_id, owner=owner)
        try:
            head = await self.get(owner, newest)
        except MemoryNotFound:  # the newer ones were forgotten: the chain ends here
            head = await self.get(owner, memory_id)
        return [head, *(await self.earlier(owner, [head.id]))[head.id]]

    async def forget_all(self, owner: str, *, agent_id: str | None = None) -> int:
        return await rows.forget_all(self.db, owner=owner, agent_id=agent_id)

    # -- the archive ------------------------------------------------------------------

    async def every(self, *, agent_id: str | None = None) -> list[Memory]:
        """Every owner's memories of any status (an export picks what it writes)."""
        return await rows.every(self.db, agent_id=agent_id)

    async def import_archived(
        self, owner: str, agent_id: str, memories: Sequence[Memory]
    ) -> tuple[int, int]:
        """(added, already there): an archive file's memories written for ``owner`` in one
        transaction. One already stored (same text, status and creation time, or an active
        one saying the same thing) is not written twice, so importing again adds nothing."""
        stored = await rows.listing(
            self.db, owner=owner, agent_id=agent_id, statuses=tuple(MemoryStatus), limit=10**7
        )
        same = {(m.text, m.status, iso_ms(m.created_at)): m.id for m in stored}
        facts = {normalised(m.text): m.id for m in stored if m.status is MemoryStatus.ACTIVE}
        known: dict[int, int] = {}
        new: list[Memory] = []
        coming: set[str] = set()  # the active facts this file adds (once each)
        for memory in memories:
            fact = normalised(memory.text)
            found = same.get((memory.text, memory.status, iso_ms(memory.created_at)))
            if found is None and memory.status is MemoryStatus.ACTIVE:
                found = facts.get(fact)
                if found is None and fact in coming:
                    continue
                coming.add(fact)
            if found is None:
                new.append(memory)
            else:
                known[memory.id] = found
        await self.check_room(owner, sum(m.status is not MemoryStatus.DELETED for m in new))
        vectors = await self._embedded_many([m.text for m in new])
        await rows.insert_imported(
            self.db, new, vectors, owner=owner, agent_id=agent_id, known=known
        )
        return len(new), len(memories) - len(new)

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

    async def _embedded_many(self, texts: Sequence[str]) -> list[tuple[str | None, bytes | None]]:
        """:meth:`_embedded` for many texts in one call of the embedder."""
        if self.embedder is None or not texts:
            return [(None, None)] * len(texts)
        try:
            found = await self.embedder.embed(list(texts))
        except EmbeddingError as exc:
            log.warning("memories stored without embeddings: %s", exc)
            return [(None, None)] * len(texts)
        return [(self.model, np.asarray(v, dtype=VECTOR_DTYPE).tobytes()) for v in found]
