"""Conversations as a caller sees them: create, list, read (paged), rename, delete, export.

Every method takes the calling :class:`Principal` and goes through the one visibility rule
(``ConversationLookup.find_visible``): someone else's conversation is simply not found.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from lumina_app.archive.service import ArchiveService
from lumina_app.domain import ConversationInfo, InvalidInput, Msg, Principal
from lumina_app.domain.ids import parse_conversation_uuid
from lumina_app.memory import MemoryManager
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.memory.conversation_reads import ConversationReads
from lumina_app.services.agents import AgentService
from lumina_app.services.live import LiveHub, Notice

MAX_SEARCH_CHARS = 200  # a longer pattern costs the database real CPU and finds nothing new


class ExportFormat(StrEnum):
    JSON = "json"
    MD = "md"
    ARCHIVE = "archive"


@dataclass(frozen=True, slots=True)
class MessagePage:
    """Messages in seq order and where to continue: ``next_after`` forward, ``next_before``
    backward, within the range asked for; None when there is no more."""

    items: list[Msg]
    next_after: int | None
    next_before: int | None
    # seq -> (version, versions) of each answer row: a regenerated turn has several
    # versions, the superseded ones first (``domain.versions``).
    versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    # seq -> (branch, branches) of each edited question (``docs/API.md``, "Branches").
    branches: dict[int, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Export:
    body: Any  # dict (json), str (md) or bytes (zip)
    filename: str


@dataclass(eq=False, repr=False)
class ConversationService:
    memory: MemoryManager
    lookup: ConversationLookup
    agents: AgentService
    archive: ArchiveService
    reads: ConversationReads
    live: LiveHub | None = None  # tells the owner's open pages of each change

    async def _announce(self, owner: str, kind: str, conversation: ConversationInfo) -> None:
        if self.live is not None:
            notice = Notice(
                kind, conversation.uuid, agent_id=conversation.agent_id, title=conversation.title
            )
            await self.live.announce(owner, notice)

    async def create(
        self, principal: Principal, *, agent_id: str, title: str = "", temporary: bool = False
    ) -> ConversationInfo:
        """A new conversation; a ``temporary`` one neither reads nor writes long-term memory."""
        agent = self.agents.definition(agent_id)
        created = await self.memory.create_conversation(
            agent_id=agent.id, title=title, owner=principal.owner, temporary=temporary
        )
        await self._announce(principal.owner, "created", created)
        return created

    async def list(
        self,
        principal: Principal,
        *,
        agent_id: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
        search: str | None = None,
        pinned: bool | None = None,
        archived: bool | None = None,
    ) -> tuple[list[ConversationInfo], str | None]:
        """Newest activity first, of every agent unless ``agent_id``; ``search`` matches
        titles and message text; ``pinned``/``archived`` keep those that are (true) or
        are not (false)."""
        if search is not None and len(search) > MAX_SEARCH_CHARS:
            raise InvalidInput(f"search text is limited to {MAX_SEARCH_CHARS} characters")
        return await self.reads.list_conversations(
            agent_id=agent_id,
            owner=principal.owner,
            limit=limit,
            cursor=cursor,
            search=search,
            pinned=pinned,
            archived=archived,
        )

    async def get(
        self, principal: Principal, conversation_uuid: str, *, agent_id: str | None = None
    ) -> ConversationInfo:
        """The caller's conversation by its public id, whose shape is checked here once."""
        return await self.lookup.find_visible(
            principal, parse_conversation_uuid(conversation_uuid), agent_id=agent_id
        )

    async def rename(
        self, principal: Principal, conversation_uuid: str, title: str
    ) -> ConversationInfo:
        """A new title; the conversation keeps its place in lists. Returns it as stored."""
        conversation = await self.get(principal, conversation_uuid)
        await self.memory.rename(conversation, title)
        renamed = await self.get(principal, conversation_uuid)
        await self._announce(principal.owner, "renamed", renamed)
        return renamed

    async def organize(
        self,
        principal: Principal,
        conversation_uuid: str,
        *,
        pinned: bool | None = None,
        archived: bool | None = None,
    ) -> ConversationInfo:
        """Pin or unpin it, archive it or bring it back (None: left as it is); it keeps
        its place by activity. Returns it as stored."""
        conversation = await self.get(principal, conversation_uuid)
        if pinned is None and archived is None:
            return conversation
        await self.memory.organize(conversation, pinned=pinned, archived=archived)
        organized = await self.get(principal, conversation_uuid)
        await self._announce(principal.owner, "renamed", organized)
        return organized

    async def propose_title(
        self, principal: Principal, conversation: ConversationInfo, title: str, *, replacing: str
    ) -> bool:
        """A title from the model for a conversation a run of ``principal`` just answered
        (so not read again), stored only while the title is still ``replacing``: a rename
        by the person in the meantime wins, and a deleted conversation takes nothing.
        Whether it was stored."""
        if not await self.memory.rename(conversation, title[:255], replacing=replacing):
            return False
        # the conditional UPDATE changed the title alone: the notice needs no second read
        await self._announce(principal.owner, "renamed", replace(conversation, title=title[:255]))
        return True

    async def fork(
        self,
        principal: Principal,
        conversation_uuid: str,
        *,
        at_seq: int | None = None,
        title: str | None = None,
    ) -> ConversationInfo:
        """A new conversation holding this one's messages up to ``at_seq`` (all of them
        by default, which makes a copy of even an empty one), to go on from there without
        touching the original. Editing a message is a fork just before it plus the new
        text (``docs/API.md``)."""
        source = await self.get(principal, conversation_uuid)
        if at_seq is None:
            at_seq = source.last_seq
        elif not 0 <= at_seq <= source.last_seq:  # 0 (none of it) only from the UI's edit
            where = f"1-{source.last_seq}" if source.last_seq else "it has no messages yet"
            raise InvalidInput(f"atSeq must be a seq of this conversation ({where})")
        if title is None:
            title = f"{source.title} (fork)" if source.title else ""
        fork = await self.memory.fork(source, at_seq, title=title[:255], owner=principal.owner)
        await self._announce(principal.owner, "forked", fork)
        return fork

    async def delete(
        self, principal: Principal, conversation_uuid: str, *, agent_id: str | None = None
    ) -> None:
        """Its rows, hot window, archive folder and run buffers all go."""
        conversation = await self.get(principal, conversation_uuid, agent_id=agent_id)
        await self.memory.delete(conversation)
        await self._announce(principal.owner, "deleted", conversation)

    async def messages(
        self,
        principal: Principal,
        conversation_uuid: str,
        *,
        limit: int = 50,
        after: int | None = None,
        before: int | None = None,
        agent_id: str | None = None,
        parked: bool = False,
    ) -> tuple[ConversationInfo, MessagePage]:
        """A page by seq: forward from ``after``, or the page ending before ``before`` (the
        UI's scroll-up); both bound a range; neither gives the first page. The active
        branch's rows, or, ``parked``, every branch's (the others' rows are ``superseded``
        with ``meta.parked``)."""
        conversation = await self.get(principal, conversation_uuid, agent_id=agent_id)
        page = await self.page(conversation, limit=limit, after=after, before=before, parked=parked)
        return conversation, page

    async def page(
        self,
        conversation: ConversationInfo,
        *,
        limit: int,
        after: int | None = None,
        before: int | None = None,
        parked: bool = False,
    ) -> MessagePage:
        """A page of a conversation already found visible (see :meth:`messages`)."""
        backward = after is None and before is not None
        if after is None and before is None:
            after = 0
        msgs = await self.reads.history(
            conversation, limit=limit, after_seq=after, before_seq=before, parked=parked
        )
        # A page the store could not fill reached the end of the range it read: what the
        # seqs leave open are rows of other branches (an edit), not more of this one.
        short = len(msgs) < limit
        if before is not None:  # with ``after`` too, the store pages forward from it: cut
            msgs = [m for m in msgs if m.seq < before]
        upper = conversation.last_seq if before is None else min(conversation.last_seq, before - 1)
        next_after = msgs[-1].seq if msgs and msgs[-1].seq < upper else None
        next_before = msgs[0].seq if msgs and msgs[0].seq > (after or 0) + 1 else None
        if short and not backward:
            next_after = None
        if short and backward:
            next_before = None
        versions = await self.reads.versions(conversation, msgs)
        branches = await self.reads.branches(conversation, msgs)
        return MessagePage(msgs, next_after, next_before, versions, branches)

    async def latest(
        self, principal: Principal, conversation_uuid: str, *, limit: int, agent_id: str | None
    ) -> tuple[ConversationInfo, MessagePage]:
        """The newest ``limit`` messages (what a chat view opens on)."""
        conversation = await self.get(principal, conversation_uuid, agent_id=agent_id)
        page = await self.page(conversation, limit=limit, before=conversation.last_seq + 1)
        return conversation, page

    async def export(
        self, principal: Principal, conversation_uuid: str, export_format: ExportFormat
    ) -> Export:
        """One conversation in the archive's shapes (ARCHITECTURE.md § Archive)."""
        conversation = await self.get(principal, conversation_uuid)
        if export_format is ExportFormat.JSON:
            body: Any = await self.archive.document(conversation)
        elif export_format is ExportFormat.MD:
            body = await self.archive.markdown(conversation)
        else:
            body = await self.archive.zip_archive(conversation)
        extension = "zip" if export_format is ExportFormat.ARCHIVE else export_format.value
        return Export(body, f"{conversation.uuid}.{extension}")
