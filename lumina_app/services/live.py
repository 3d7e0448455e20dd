"""Live pages: what an owner's open pages learn as it happens — a run started in one of
their conversations, a run ended, a conversation created, renamed, forked or deleted —
whoever did it (another tab, REST, the OpenAI-compatible doors) and on whichever instance.

A notice only says *that* something happened; a page that shows the conversation then
follows the run through its event log (``RunService.events``), which replays from any
instance. Notices travel on one bus (``storage/live_bus``): with Redis one Pub/Sub channel
and one listening connection per process, fanned out here to the pages of that owner.

Cost per open page: one bounded queue (``QUEUE`` notices, a few KB) and the page's one
waiting task; no Redis connection of its own. A page wakes every ``IDLE_SECONDS`` when
nothing happens so that a page gone away is let go within that time. At most
``PER_OWNER`` pages per owner and ``TOTAL`` per process follow live; more get
:class:`TooManyLivePages` (they still work, refreshed on load)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, fields
from typing import Any

from lumina_app.agents.run.run_driver import ActiveRun
from lumina_app.agents.run.turns import RunRequest
from lumina_app.domain import LuminaError, Principal
from lumina_app.domain.tasks import keep
from lumina_app.storage.live_bus import LiveBus

log = logging.getLogger(__name__)

QUEUE = 64
PER_OWNER = 32
TOTAL = 2000
IDLE_SECONDS = 5.0


class TooManyLivePages(LuminaError):
    code = "too_many_live_pages"


class AlreadyLive(LuminaError):
    """This page follows already for the same owner (one feed per page, whatever its
    loads and reloads)."""

    code = "already_live"


@dataclass(frozen=True, slots=True)
class Notice:
    """``kind``: run (started), ended, created, renamed, forked, deleted, branched (an
    edited question's branch switched) — or closed (the owner may no longer follow:
    their pages stop)."""

    kind: str
    conversation: str = ""
    agent_id: str = ""
    run_id: str = ""
    question: str = ""  # a run's question (so a page shows it without reading it back)
    regenerate: bool = False
    title: str = ""
    edited: int = 0  # an edit's run: the seq of the question asked again (0: none)
    files: tuple[dict[str, Any], ...] = ()  # a run's question's files ({id, name, type, size})


_FIELDS = frozenset(f.name for f in fields(Notice))


class LiveFeed:
    """One open page's notices, in order; ``None`` when nothing came for a while."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Notice] = asyncio.Queue(maxsize=QUEUE)

    async def next(self, idle: float = IDLE_SECONDS) -> Notice | None:
        try:
            return await asyncio.wait_for(self.queue.get(), idle)
        except TimeoutError:
            return None

    def put(self, notice: Notice) -> None:
        if self.queue.full():  # a page that does not keep up loses the oldest notice
            self.queue.get_nowait()
        self.queue.put_nowait(notice)

    def close(self) -> None:
        """No more notices come; the page's next wait returns "closed" at once."""
        self.put(Notice("closed"))


class LiveHub:
    def __init__(self, bus: LiveBus, *, per_owner: int = PER_OWNER, total: int = TOTAL) -> None:
        self.bus = bus
        self.per_owner = per_owner
        self.total = total
        self._pages: dict[str, set[LiveFeed]] = {}
        self._keys: dict[str, tuple[str, LiveFeed]] = {}  # page key → its owner and feed
        self._count = 0
        self._watching: set[asyncio.Task] = set()

    @property
    def open_pages(self) -> int:
        return self._count

    @contextlib.asynccontextmanager
    async def page(self, principal: Principal, key: str) -> AsyncIterator[LiveFeed]:
        """An open page of ``principal``'s (``key`` names it: the browser tab), following
        their notices until it leaves. A tab signed in again as someone else takes its key
        over: the previous owner's feed gets nothing more from that moment and ends."""
        owner = principal.owner
        held = self._keys.get(key)
        if held is not None:
            if held[0] == owner:
                raise AlreadyLive(key)
            self._drop(key, *held)
        pages = self._pages.setdefault(owner, set())
        if len(pages) >= self.per_owner or self._count >= self.total:
            if not pages:
                del self._pages[owner]
            raise TooManyLivePages("too many open pages follow live; this one refreshes on load")
        feed = LiveFeed()
        pages.add(feed)
        self._keys[key] = (owner, feed)
        self._count += 1
        try:
            yield feed
        finally:
            if self._keys.get(key) == (owner, feed):  # not taken over meanwhile
                self._drop(key, owner, feed)

    def _drop(self, key: str, owner: str, feed: LiveFeed) -> None:
        pages = self._pages.get(owner, set())
        pages.discard(feed)
        del self._keys[key]
        self._count -= 1
        if not pages:
            self._pages.pop(owner, None)
        feed.close()

    async def announce(self, owner: str, notice: Notice) -> None:
        await self.bus.publish(owner, asdict(notice))

    async def close_owner(self, owner: str) -> None:
        """This owner's pages on every instance stop following (a disabled account)."""
        await self.announce(owner, Notice("closed"))

    def run_accepted(self, request: RunRequest, run: ActiveRun) -> None:
        """The engine accepted a run (its ``on_run_started``): tell the owner's pages."""
        regenerate, edited = request.regenerates, request.edit_seq or 0
        self.run_started(request.principal.owner, run, regenerate=regenerate, edited=edited)

    def run_started(
        self, owner: str, run: ActiveRun, *, regenerate: bool = False, edited: int = 0
    ) -> None:
        """Tell the owner's pages now, and again when the run ends (in the background:
        the caller is not held up)."""
        started = Notice(
            "run",
            conversation=run.conversation.uuid,
            agent_id=run.conversation.agent_id,
            run_id=run.run_id,
            question=run.user.content,
            regenerate=regenerate,
            title=run.conversation.title,
            edited=edited,
            files=tuple(run.user.files),
        )
        ended = Notice("ended", conversation=started.conversation, agent_id=started.agent_id)
        keep(self._watching, self._follow_run(owner, run, started, ended), "live-notice")

    async def _follow_run(self, owner: str, run: ActiveRun, started: Notice, ended: Notice):
        await self.announce(owner, started)
        await run.done.wait()
        await self.announce(owner, ended)

    def deliver(self, owner: str, data: dict[str, Any]) -> None:
        """A notice from the bus: to this owner's pages in this process."""
        pages = self._pages.get(owner)
        if not pages or not isinstance(data.get("kind"), str):
            return
        notice = Notice(**{k: v for k, v in data.items() if k in _FIELDS})
        for feed in pages:
            feed.put(notice)

    async def run_forever(self) -> None:
        await self.bus.listen(self.deliver)
