"""Imports of other products' chat exports and memory blocks (issue #47): the one path the
API, the CLI and the Import page share. The whole file is read and checked first (a bad
one is a 4xx and nothing is stored); then each conversation is written in one transaction
through the archive import's write path (``ArchiveRows.import_conversation``: the search
triggers see the rows, the embed worker is told), under a uuid derived from the owner and
the conversation's import fingerprint, so importing the same file again adds nothing.

Progress lives in an in-process registry (per worker, the newest ``MAX_JOBS`` kept): a
poll that reaches another instance than the one importing gets a 404 (docs/IMPORTS.md)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import Literal

from lumina_app.agents.after_run.memory_extractor import (
    ExtractionFailed,
    MalformedReply,
    MemoryExtractor,
    Turn,
)
from lumina_app.archive.chat_imports import (
    ImportSource,
    ParsedConversation,
    ParsedExport,
    fingerprint,
    parse_upload,
)
from lumina_app.archive.service import ArchiveService
from lumina_app.domain import (
    ConversationInfo,
    ConversationStatus,
    ImportOutcome,
    InvalidInput,
    Msg,
    MsgRole,
    NotFound,
    Principal,
    QuotaExceeded,
    StoreUnavailable,
    utcnow,
)
from lumina_app.domain.tasks import keep
from lumina_app.memory.long_term import LongTermMemory
from lumina_app.services.agents import AgentService

log = logging.getLogger(__name__)
MAX_JOBS = 1000
_NAMESPACE = uuid.UUID("0f3c2b7e-9a41-4d55-8e0b-47a1c6d2e913")
Status = Literal["running", "done", "failed"]


class ImportNotFound(NotFound):
    def __init__(self, import_id: str) -> None:
        super().__init__(f"import {import_id!r} not found")


@dataclass(slots=True)
class Preview:
    source: ImportSource
    conversations: int
    messages: int
    branches_skipped: int
    first: datetime | None
    last: datetime | None
    facts: int = 0
    titles: list[str] = field(default_factory=list)  # the first few, as text


@dataclass(slots=True)
class ImportJob:
    id: str
    owner: str
    source: ImportSource
    agent_id: str
    extract_memories: bool
    total: int
    status: Status = "running"
    done: int = 0
    conversations_added: int = 0
    conversations_skipped: int = 0
    messages_added: int = 0
    branches_skipped: int = 0
    left_out: int = 0
    memories_added: int = 0
    errors: list[str] = field(default_factory=list)
    conversation_ids: list[str] = field(default_factory=list)
    created_at: datetime = field(default_factory=utcnow)
    finished_at: datetime | None = None


def conversation_uuid(owner: str, source: ImportSource, source_id: str) -> str:
    """Where an export's conversation lands for ``owner``: always the same place."""
    return str(uuid.uuid5(_NAMESPACE, f"{owner}\0{fingerprint(source, source_id)}"))


def _turn_id(uuid_: str, source_id: str) -> str:
    return "msg-imp-" + hashlib.sha256(f"{uuid_}\0{source_id}".encode()).hexdigest()[:24]


def to_messages(
    conversation_uuid_: str, parsed: ParsedConversation, source: ImportSource
) -> list[Msg]:
    """The parsed messages as rows: each question opens a turn its answers share."""
    msgs: list[Msg] = []
    turn = ""
    for message in parsed.messages:
        if message.role is MsgRole.USER or not turn:
            turn = _turn_id(conversation_uuid_, message.source_id)
        msgs.append(
            Msg(
                message.role,
                message.text,
                turn_id=turn,
                created_at=message.created_at,
                updated_at=message.created_at,
                meta={"importedFrom": source.value, "sourceId": message.source_id},
            )
        )
    return msgs


@dataclass(eq=False, repr=False)
class ImportService:
    archive: ArchiveService
    agents: AgentService
    memories: LongTermMemory
    _: KW_ONLY
    max_bytes: int
    extractor: MemoryExtractor | None = None
    # the embed worker: vectors for the new rows
    on_stored: Callable[[ConversationInfo], None] | None = None
    _jobs: OrderedDict[str, ImportJob] = field(default_factory=OrderedDict, init=False)
    _tasks: set[asyncio.Task] = field(default_factory=set, init=False)

    async def parse(self, source: ImportSource, data: bytes) -> ParsedExport:
        """The whole upload read and checked, off the event loop; raises a 4xx error."""
        return await asyncio.to_thread(parse_upload, source, data, max_bytes=self.max_bytes)

    async def preview(self, source: ImportSource, data: bytes) -> Preview:
        """What an import of ``data`` would add, without storing anything."""
        parsed = await self.parse(source, data)
        first, last = parsed.date_range()
        return Preview(
            source,
            len(parsed.conversations),
            parsed.messages,
            parsed.branches_skipped,
            first,
            last,
            facts=len(parsed.facts),
            titles=[c.title for c in parsed.conversations[:5]],
        )

    async def start_import(
        self,
        principal: Principal,
        *,
        source: ImportSource,
        data: bytes,
        agent_id: str,
        extract_memories: bool = False,
        memories_from: ImportSource = ImportSource.CHATGPT,
        wait: bool = False,
    ) -> ImportJob:
        """Check and parse everything now (errors raise), then write in the background —
        or, with ``wait`` (the CLI), to its end before returning."""
        job, parsed = await self._prepare(
            principal, source, data, agent_id, extract_memories, memories_from
        )
        if wait:
            await self._run(job, parsed, memories_from)
            return job
        keep(self._tasks, self._run(job, parsed, memories_from), "chat-import")
        return job

    def get(self, principal: Principal, import_id: str) -> ImportJob:
        job = self._jobs.get(import_id)
        if job is None or job.owner != principal.owner:
            raise ImportNotFound(import_id)
        return job

    async def wait(self) -> None:
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- the work -----------------------------------------------------------------------

    async def _prepare(
        self,
        principal: Principal,
        source: ImportSource,
        data: bytes,
        agent_id: str,
        extract_memories: bool,
        memories_from: ImportSource,
    ) -> tuple[ImportJob, ParsedExport]:
        agent = self.agents.definition(agent_id)
        if memories_from not in (ImportSource.CHATGPT, ImportSource.CLAUDE):
            raise InvalidInput("memoriesFrom must be chatgpt or claude")
        parsed = await self.parse(source, data)
        total = len(parsed.facts) if source is ImportSource.MEMORIES else len(parsed.conversations)
        job = ImportJob(
            id="imp-" + secrets.token_hex(8),
            owner=principal.owner,
            source=source,
            agent_id=agent.id,
            extract_memories=extract_memories,
            total=total,
            branches_skipped=parsed.branches_skipped,
            left_out=sum(c.left_out for c in parsed.conversations),
        )
        self._jobs[job.id] = job
        while len(self._jobs) > MAX_JOBS:
            self._jobs.popitem(last=False)
        return job, parsed

    async def _run(self, job: ImportJob, parsed: ParsedExport, memories_from: ImportSource) -> None:
        try:
            if job.source is ImportSource.MEMORIES:
                await self._write_facts(job, parsed.facts, memories_from)
            else:
                for conversation in parsed.conversations:
                    await self._write_conversation(job, conversation)
                    job.done += 1
            job.status = "done"
        except (StoreUnavailable, OSError) as exc:
            job.status = "failed"
            job.errors.append(f"the import stopped: {exc}")
            log.warning("import %s stopped: %s", job.id, exc)
        finally:
            job.finished_at = utcnow()

    async def _write_facts(self, job: ImportJob, facts: list[str], origin: ImportSource) -> None:
        for fact in facts:
            try:
                _memory, new = await self.memories.add(
                    job.owner,
                    job.agent_id,
                    fact,
                    scope_agent=job.agent_id,
                    origin=f"imported from {origin.label}",
                )
            except InvalidInput as exc:
                job.errors.append(f"{fact[:60]!r}: {exc}")
                new = False
            except QuotaExceeded as exc:  # the owner's memory limit: the rest is not kept
                job.errors.append(f"{len(facts) - job.done} memories not kept: {exc}")
                return
            job.memories_added += new
            job.done += 1

    async def _write_conversation(self, job: ImportJob, parsed: ParsedConversation) -> None:
        if not parsed.messages:
            job.conversations_skipped += 1
            return
        target = conversation_uuid(job.owner, job.source, parsed.source_id)
        msgs = to_messages(target, parsed, job.source)
        info = ConversationInfo(
            uuid=target,
            agent_id=job.agent_id,
            title=parsed.title,
            status=ConversationStatus.IDLE,
            message_count=len(msgs),
            tool_call_count=0,
            last_seq=len(msgs),
            owner=job.owner,
            created_at=parsed.created_at,
            updated_at=max(parsed.updated_at, msgs[-1].created_at or parsed.updated_at),
        )
        try:
            outcome, added = await self.archive.rows.import_conversation(info, msgs)
        except InvalidInput as exc:
            job.conversations_skipped += 1
            job.errors.append(f"{parsed.title!r}: {exc}")
            return
        if outcome is ImportOutcome.UNCHANGED:
            job.conversations_skipped += 1
            return
        job.conversations_added += outcome is ImportOutcome.CREATED
        job.messages_added += added
        job.conversation_ids.append(target)
        stored = await self.archive.lookup.get_conversation(target)
        if self.on_stored is not None:
            self.on_stored(stored)
        if job.extract_memories:
            await self._extract(job, stored, msgs[-added:])

    async def _extract(self, job: ImportJob, stored: ConversationInfo, msgs: list[Msg]) -> None:
        """Memory extraction over each question and its answer, as after a run."""
        if self.extractor is None:
            return
        agent = self.agents.definition(job.agent_id)
        before = len(await self.memories.listing(job.owner, agent_id=None, limit=10_000))
        for n, msg in enumerate(msgs):
            if msg.role is not MsgRole.USER:
                continue
            answer = next((m.content for m in msgs[n + 1 :] if m.turn_id == msg.turn_id), "")
            turn = Turn(agent, job.owner, stored.uuid, None, msg.content, answer)
            try:
                await self.extractor.extract(turn)
            except (ExtractionFailed, MalformedReply, StoreUnavailable) as exc:
                job.errors.append(f"memories of {stored.title!r} not all extracted: {exc}")
                return
        after = len(await self.memories.listing(job.owner, agent_id=None, limit=10_000))
        job.memories_added += max(0, after - before)
