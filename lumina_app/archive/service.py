"""Export and import of the conversation archive: the one service path the API and the CLI
share (ARCHITECTURE.md § Archive). Files in a thread; SQL one query / one transaction per
conversation."""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import uuid
import zipfile
from collections.abc import Callable, Collection
from dataclasses import KW_ONLY, dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from lumina_app.archive import attachments, memory_files, unzip, writer
from lumina_app.archive import format as files
from lumina_app.archive.attachments import ArchiveFiles, AttachedFile
from lumina_app.archive.limits import DEFAULT_LIMITS, ImportLimits
from lumina_app.archive.reader import read_conversation
from lumina_app.archive.tree import find_agent_folders, find_conversation_folders
from lumina_app.domain import (
    ConversationInfo,
    ConversationNotFound,
    ImportOutcome,
    InvalidInput,
    Msg,
    QuotaExceeded,
)
from lumina_app.domain.access import is_safe_name
from lumina_app.domain.ids import parse_conversation_uuid
from lumina_app.memory import MemoryManager
from lumina_app.memory.archive_rows import ArchiveRows
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.memory.long_term import LongTermMemory

log = logging.getLogger(__name__)
MAX_OWNER = 128  # lumina_conversation.owner is String(128)
# An imported conversation whose uuid is another owner's gets uuid5(this, owner + uuid).
_IMPORT_NAMESPACE = uuid.UUID("6b1f0c3e-5d4a-4e2b-9a61-4c1d2e3f4a5b")

Progress = Callable[[int, int], None]
"""``progress(done, total)``, called as items complete."""


@dataclass(slots=True)
class ImportItem:
    """What importing one conversation folder did; ``error`` names the file at fault."""

    folder: Path
    conversation_uuid: str | None = None
    agent_id: str | None = None
    outcome: ImportOutcome | None = None
    added: int = 0
    error: str | None = None
    memories: int = 0  # a memory file: how many it added (``outcome`` is None)


@dataclass(slots=True)
class ImportReport:
    items: list[ImportItem] = field(default_factory=list)

    def count(self, outcome: ImportOutcome) -> int:
        return sum(1 for item in self.items if item.outcome is outcome)

    @property
    def errors(self) -> list[str]:
        return [item.error for item in self.items if item.error]

    @property
    def messages_added(self) -> int:
        return sum(item.added for item in self.items)

    @property
    def memories_added(self) -> int:
        return sum(item.memories for item in self.items)


@dataclass(slots=True)
class ExportReport:
    root: Path
    conversations: int = 0
    messages: int = 0
    memories: int = 0


@dataclass(eq=False, repr=False)
class ArchiveService:
    """Writes conversations to ``<root>/agents/...`` and reads such trees back into SQL."""

    memory: MemoryManager
    lookup: ConversationLookup
    rows: ArchiveRows
    root: Path
    _: KW_ONLY
    limits: ImportLimits = DEFAULT_LIMITS
    memories: LongTermMemory | None = None  # long-term memories: agents/<id>/memory/<owner>.json
    files: ArchiveFiles | None = None  # the messages' files: <messageId>/files/<name>
    # Serialises writes under ``root`` with deletes, so a late mirror write cannot
    # resurrect the folder of a conversation deleted meanwhile.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)

    # -- reading what to export --------------------------------------------------------

    async def snapshot(self, conversation: ConversationInfo) -> list[Msg]:
        """The conversation's final messages in seq order (one query)."""
        return await self.rows.final_messages(conversation)

    async def select(
        self, *, agent_id: str | None = None, conversation_uuid: str | None = None
    ) -> list[ConversationInfo]:
        """Every owner's conversations, optionally one agent's or one by id."""
        if conversation_uuid is not None:
            uuid = parse_conversation_uuid(conversation_uuid)
            return [await self.lookup.get_conversation(uuid, agent_id=agent_id)]
        found: list[ConversationInfo] = []
        cursor = None
        while True:
            page, cursor = await self.rows.list_conversations(
                agent_id=agent_id, limit=500, cursor=cursor
            )
            found.extend(page)
            if cursor is None:
                return found

    # -- export --------------------------------------------------------------------------

    async def export_conversation(
        self,
        conversation: ConversationInfo,
        root: Path | None = None,
        *,
        turns: Collection[str] | None = None,
    ) -> int:
        """Write one conversation's folder under ``root`` (default: the data dir); returns
        the number of messages written."""
        msgs = await self.snapshot(conversation)
        summaries = await self.rows.summaries_of(conversation)
        parked = await self.rows.parked_messages(conversation)
        # the mirror (``turns`` given) writes text only: files go with an export
        attached = await self.attached(conversation, [*msgs, *parked]) if turns is None else None
        await asyncio.to_thread(
            partial(
                writer.write_conversation,
                turns=turns,
                summaries=summaries,
                parked=parked,
                attached=attached,
            ),
            root or self.root,
            conversation,
            msgs,
        )
        return len(msgs)

    async def attached(
        self, conversation: ConversationInfo, msgs: list[Msg]
    ) -> dict[str, tuple[AttachedFile, bytes]]:
        """The files the messages carry, with their bytes (those still stored)."""
        found: dict[str, tuple[AttachedFile, bytes]] = {}
        if self.files is None:
            return found
        for file_id in attachments.file_ids(msgs):
            facts = await self.files.facts(conversation.owner, file_id)
            if facts is not None:
                data = b"".join([c async for c in self.files.content(conversation.owner, file_id)])
                found[file_id] = (facts, data)
        return found

    async def export_all(
        self,
        root: Path | None = None,
        *,
        agent_id: str | None = None,
        conversation_uuid: str | None = None,
        progress: Progress | None = None,
    ) -> ExportReport:
        conversations = await self.select(agent_id=agent_id, conversation_uuid=conversation_uuid)
        report = ExportReport(root or self.root)
        for done, conversation in enumerate(conversations, start=1):
            report.messages += await self.export_conversation(conversation, report.root)
            report.conversations += 1
            if progress:
                progress(done, len(conversations))
        if conversation_uuid is None:
            report.memories = await self.export_memories(report.root, agent_id=agent_id)
        return report

    async def export_memories(self, root: Path, *, agent_id: str | None = None) -> int:
        """One ``agents/<agentId>/memory/<owner>.json`` per agent and owner with memories
        (forgotten ones left out); returns how many memories were written."""
        if self.memories is None:
            return 0
        groups: dict[tuple[str, str], list] = {}
        for memory in await self.memories.every(agent_id=agent_id):
            groups.setdefault((memory.agent_id, memory.owner), []).append(memory)
        rendered: dict[PurePosixPath, bytes] = {}
        written = 0
        for (agent, owner), found in groups.items():
            if not is_safe_name(agent, max_length=128):
                log.warning("memories of agent %r not exported: not a folder name", agent)
                continue
            document = memory_files.memory_document(agent, owner, found)
            if not document["memories"]:
                continue
            rel = PurePosixPath("agents", agent, memory_files.MEMORY_FOLDER)
            rendered[rel / memory_files.file_name(owner)] = files.dump_json(document)
            written += len(document["memories"])
        await asyncio.to_thread(writer.write_files, root, rendered)
        return written

    async def document(self, conversation: ConversationInfo) -> dict[str, Any]:
        """``{"meta": <meta.json>, "history": <history.json>}``, and ``"branches"``
        (<branches.json>) when a question was edited."""
        msgs = await self.snapshot(conversation)
        summaries = await self.rows.summaries_of(conversation)
        parked = await self.rows.parked_messages(conversation)
        document = {
            "meta": files.archive_meta(conversation, msgs, summaries),
            "history": files.archive_history(msgs),
        }
        if parked:
            document["branches"] = files.branches_document(msgs, parked)
        return document

    async def markdown(self, conversation: ConversationInfo) -> str:
        msgs = await self.snapshot(conversation)
        parked = await self.rows.parked_messages(conversation)
        return files.markdown_transcript(conversation, msgs, parked)

    async def zip_archive(self, conversation: ConversationInfo) -> bytes:
        """The conversation's folder, laid out from the archive root, as a .zip."""
        msgs = await self.snapshot(conversation)
        summaries = await self.rows.summaries_of(conversation)
        parked = await self.rows.parked_messages(conversation)
        attached = await self.attached(conversation, [*msgs, *parked])
        return await asyncio.to_thread(
            lambda: files.zip_files(
                files.conversation_files(
                    conversation, msgs, summaries=summaries, parked=parked, attached=attached
                )
            )
        )

    # -- import --------------------------------------------------------------------------

    async def import_path(
        self,
        path: Path,
        *,
        owner: str = "",
        limits: ImportLimits | None = None,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Import an archive root, an agent folder, one conversation folder, or a .zip of
        any of them. Each conversation is one transaction; a bad one is reported (with the
        file at fault) and skipped, the others go in. ``limits`` caps what is read."""
        _check_owner(owner)
        limits = limits or self.limits
        if await asyncio.to_thread(_is_zip, path):
            return await self._import_zip(path, owner=owner, limits=limits, progress=progress)
        return await self._import_tree(path, owner=owner, limits=limits, progress=progress)

    async def _import_tree(
        self,
        path: Path,
        *,
        owner: str,
        limits: ImportLimits,
        progress: Progress | None,
        skip: Collection[Path] = (),
    ) -> ImportReport:
        try:
            found = await asyncio.to_thread(find_conversation_folders, path)
        except files.ArchiveError as exc:
            return ImportReport([ImportItem(path, error=str(exc))])
        report = ImportReport([ImportItem(e.path, error=str(e)) for e in found.refused])
        folders = [folder for folder in found.folders if folder not in skip]
        for done, folder in enumerate(folders, start=1):
            report.items.append(await self.import_folder(folder, owner=owner, limits=limits))
            if progress:
                progress(done, len(folders))
        if self.memories is not None:
            report.items += await self._import_memories(path, owner, limits, skip)
        return report

    async def _import_memories(
        self, path: Path, owner: str, limits: ImportLimits, skip: Collection[Path]
    ) -> list[ImportItem]:
        """Each memory file under ``path``: read and checked whole, then written for
        ``owner`` in one transaction, or refused with nothing written."""
        agents = await asyncio.to_thread(find_agent_folders, path)
        found, refused = await asyncio.to_thread(memory_files.find_memory_files, agents)
        items = [ImportItem(e.path, error=str(e)) for e in refused]
        for file in found:
            if file in skip:
                continue
            items.append(await self._import_memory_file(file, owner, limits))
        return items

    async def _import_memory_file(self, path: Path, owner: str, limits: ImportLimits) -> ImportItem:
        item = ImportItem(path)
        assert self.memories is not None
        try:
            read = await asyncio.to_thread(
                memory_files.read_memory_file, path, max_file_bytes=limits.max_file_bytes
            )
        except files.ArchiveError as exc:
            item.error = str(exc)
            return item
        item.agent_id = read.agent_id
        if read.owner != owner:
            item.error = (
                f"{path}: holds the memories of owner {read.owner!r}; this import is for "
                f"owner {owner!r} (an import writes only its own owner's memories)"
            )
            return item
        try:
            added = await self.memories.import_archived(owner, read.agent_id, read.memories)
        except QuotaExceeded as exc:  # the owner's memory limit: this file is not imported
            item.error = f"{path}: {exc}"
            return item
        item.memories = added[0]
        return item

    async def _import_zip(
        self, path: Path, *, owner: str, limits: ImportLimits, progress: Progress | None
    ) -> ImportReport:
        """Unpack what an import reads into a private temporary folder, then import that;
        a conversation with a refused member (a link, too large, corrupt) is skipped."""
        tmp = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="lumina-import-"))
        try:
            try:
                refused = await asyncio.to_thread(unzip.extract, path, tmp, limits)
            except files.ArchiveError as exc:
                return ImportReport([ImportItem(path, error=str(exc))])
            # the folders holding a refused member, up to the root (one may be a conversation)
            skip = {tmp.joinpath(*m.parts[:n]) for m in refused for n in range(len(m.parts) + 1)}
            report = await self._import_tree(
                tmp, owner=owner, limits=limits, progress=progress, skip=skip
            )
        finally:
            await asyncio.to_thread(shutil.rmtree, tmp, True)
        for item in report.items:  # name files inside the zip, not the temp folder
            item.folder = path / item.folder.relative_to(tmp)
            item.error = item.error and item.error.replace(str(tmp), str(path))
        refusals = [ImportItem(path, error=f"{path}/{m.name}: {m.reason}") for m in refused]
        report.items[:0] = refusals
        return report

    async def import_folder(
        self, folder: Path, *, owner: str = "", limits: ImportLimits = DEFAULT_LIMITS
    ) -> ImportItem:
        item = ImportItem(folder)
        try:
            archived = await asyncio.to_thread(
                read_conversation, folder, max_file_bytes=limits.max_file_bytes
            )
        except files.ArchiveError as exc:
            item.error = str(exc)
            return item
        conversation = archived.conversation
        conversation.owner = owner
        conversation.uuid = await self._uuid_for(conversation.uuid, owner)
        item.conversation_uuid, item.agent_id = conversation.uuid, conversation.agent_id
        uploaded: list[str] = []
        try:
            uploaded = await self._upload_files(folder, owner, archived.messages)
            item.outcome, item.added = await self.rows.import_conversation(
                conversation, archived.messages, archived.summaries
            )
        except (InvalidInput, QuotaExceeded) as exc:
            item.error = exc.args[0] if isinstance(exc, _FileRefused) else f"{folder}: {exc}"
        finally:  # the uploads no appended message links (all of them, on a refusal)
            added = archived.messages[len(archived.messages) - item.added :] if item.added else []
            linked = set(attachments.file_ids(added))
            await self._drop(owner, [f for f in uploaded if f not in linked])
        return item

    async def _upload_files(self, folder: Path, owner: str, msgs: list[Msg]) -> list[str]:
        """Upload the files the archive lists as ``owner``'s, checked like any upload and
        against the sha256 the archive gives; each message's ``meta["files"]`` then names
        the new ids. Returns them; a refusal raises ``_FileRefused`` (what was uploaded
        already is dropped)."""
        uploaded: list[str] = []
        try:
            for msg in msgs:
                listed = msg.meta.pop(attachments.ARCHIVED, None)
                if not listed:
                    continue
                if self.files is None:
                    raise _FileRefused(f"{folder}: this import cannot store files")
                described = []
                for archived in listed:
                    stored = await self._upload_one(folder, owner, archived)
                    uploaded.append(stored.id)
                    described.append(
                        {"id": stored.id, "name": stored.name, "type": stored.media_type,
                         "size": stored.size}
                    )  # fmt: skip
                msg.meta["files"] = described
        except BaseException:
            await self._drop(owner, uploaded)
            raise
        return uploaded

    async def _upload_one(
        self, folder: Path, owner: str, archived: attachments.ArchivedFile
    ) -> AttachedFile:
        assert self.files is not None
        path = folder.joinpath(*archived.path.split("/"))
        try:
            stored = await self.files.store(owner, archived.name, path)
        except (InvalidInput, QuotaExceeded) as exc:
            raise _FileRefused(f"{path}: {exc}") from None
        if stored.sha256 != archived.sha256:
            await self._drop(owner, [stored.id])
            raise _FileRefused(
                f"{path}: its sha256 is {stored.sha256}, the archive says {archived.sha256}: "
                "refused (the file was changed or damaged)"
            )
        return stored

    async def _drop(self, owner: str, file_ids: list[str]) -> None:
        for file_id in file_ids:
            assert self.files is not None
            await self.files.drop(owner, file_id)

    async def _uuid_for(self, archived: str, owner: str) -> str:
        """The uuid an import uses: the archive's, unless another owner's conversation has
        it — then one derived from the owner and that uuid, so this owner's import never
        lands on (or next to) someone else's conversation and importing again is
        idempotent. (A race with a new conversation of another owner is still refused by
        the import's own check.)"""
        try:
            existing = await self.lookup.get_conversation(archived)
        except ConversationNotFound:
            return archived
        if existing.owner == owner:
            return archived
        derived = str(uuid.uuid5(_IMPORT_NAMESPACE, f"{owner}\0{archived}"))
        log.info("import: %s belongs to another owner; imported as %s", archived, derived)
        return derived

    # -- the folder of a deleted conversation ---------------------------------------------

    async def remove(self, conversation: ConversationInfo) -> None:
        """``on_delete`` hook: the conversation's archive folder goes with it."""
        async with self.lock:
            try:
                await asyncio.to_thread(
                    writer.remove_conversation, self.root, conversation.agent_id, conversation.uuid
                )
            except OSError as exc:
                log.warning("archive folder of %s not removed: %s", conversation.uuid, exc)

    async def write_turns(self, conversation_uuid: str, turns: Collection[str]) -> None:
        """Mirror one conversation's latest state (logs of ``turns`` only) under the lock;
        a conversation deleted meanwhile raises ``ConversationNotFound``."""
        async with self.lock:
            conversation = await self.lookup.get_conversation(conversation_uuid)
            await self.export_conversation(conversation, turns=turns)


class _FileRefused(InvalidInput):
    """A file of the archive cannot be imported; the message names it."""


def _is_zip(path: Path) -> bool:
    return path.is_file() and zipfile.is_zipfile(path)


def _check_owner(owner: str) -> None:
    """The owner column is String(128) of real text; refuse anything else up front."""
    if len(owner) > MAX_OWNER or not owner.isprintable():
        raise InvalidInput(f"owner must be at most {MAX_OWNER} printable characters")
