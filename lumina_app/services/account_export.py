"""Everything an account has, as one zip streamed as it is written (``GET
/api/v1/account/export``): every conversation of the caller in the archive layout
(``agents/<agentId>/conversations/<convId>/``, importable again), a Markdown transcript of
each (``markdown/<agentId>/<convId>.md``), the long-term memories
(``agents/<agentId>/memory/<owner>.json``), every uploaded file (``files/<id>/<name>``,
listed in ``files/files.json``; a message's files are also beside its turn) and
``account.json`` — the account's settings,
its keys by name and prefix, its sessions; never a password hash or a key.

Conversations are read a page at a time and written one at a time: memory holds one
conversation and the bytes not yet sent, whatever the account's size.
"""

from __future__ import annotations

import asyncio
import zipfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from lumina_app.archive import format as files
from lumina_app.archive import memory_files
from lumina_app.archive.attachments import folder_name
from lumina_app.archive.service import ArchiveService
from lumina_app.domain import AccessDenied, ConversationInfo, Principal, utcnow
from lumina_app.domain.access import is_safe_name
from lumina_app.domain.views import iso_ms
from lumina_app.memory.conversation_reads import ConversationReads
from lumina_app.memory.long_term import LongTermMemory
from lumina_app.services.accounts import AccountService
from lumina_app.services.files import FileService, StoredFile

PAGE = 50
MAX_MEMORIES = 1_000_000
ACCOUNT_FILE = "account.json"
FILES_FOLDER = "files"  # every uploaded file: files/<id>/<name>, listed in files/files.json
FILES_INDEX = "files.json"
MARKDOWN_FOLDER = "markdown"


class _Sink:
    """A write-only, unseekable stream: zipfile writes data descriptors, the generator
    takes what was written so far."""

    def __init__(self) -> None:
        self._data = bytearray()

    def write(self, data: bytes) -> int:
        self._data += data
        return len(data)

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data = bytes(self._data)
        self._data.clear()
        return data


def _write(archive: zipfile.ZipFile, rendered: dict[PurePosixPath, bytes]) -> None:
    for rel in sorted(rendered, key=str):
        archive.writestr(str(rel), rendered[rel])


@dataclass(eq=False, repr=False)
class AccountExport:
    reads: ConversationReads
    archive: ArchiveService
    accounts: AccountService
    memories: LongTermMemory | None
    uploads: FileService | None = None

    @staticmethod
    def filename(principal: Principal) -> str:
        who = principal.owner if is_safe_name(principal.owner, max_length=64) else "local"
        return f"lumina-{who}-{utcnow():%Y%m%d}.zip"

    async def stream(self, principal: Principal) -> AsyncIterator[bytes]:
        """The zip, chunk by chunk; only the caller's own data, by construction."""
        sink = _Sink()
        archive = zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED)
        counts = {"conversations": 0, "messages": 0, "memories": 0, "files": 0}
        after = 0
        while page := await self.reads.batch(owner=principal.owner, after_id=after, limit=PAGE):
            for conversation in page:
                counts["messages"] += await self._conversation(archive, conversation)
                counts["conversations"] += 1
                if chunk := sink.take():
                    yield chunk
            after = page[-1].id
        counts["memories"] = await self._memories(archive, principal.owner)
        async for chunk in self._files(archive, sink, principal, counts):
            yield chunk
        document = await self._account(principal, counts)
        await asyncio.to_thread(_write, archive, {PurePosixPath(ACCOUNT_FILE): document})
        archive.close()
        yield sink.take()

    async def _conversation(self, archive: zipfile.ZipFile, conversation: ConversationInfo) -> int:
        msgs = await self.archive.snapshot(conversation)
        summaries = await self.archive.rows.summaries_of(conversation)
        parked = await self.archive.rows.parked_messages(conversation)  # edited questions'
        attached = await self.archive.attached(conversation, [*msgs, *parked])
        rendered = files.conversation_files(
            conversation, msgs, summaries=summaries, parked=parked, attached=attached
        )
        md = PurePosixPath(MARKDOWN_FOLDER, conversation.agent_id, f"{conversation.uuid}.md")
        rendered[md] = files.markdown_transcript(conversation, msgs, parked).encode("utf-8")
        await asyncio.to_thread(_write, archive, rendered)
        return len(msgs)

    async def _files(
        self,
        archive: zipfile.ZipFile,
        sink: _Sink,
        principal: Principal,
        counts: dict[str, int],
    ) -> AsyncIterator[bytes]:
        """Every file the owner has (on a message or not) as ``files/<id>/<name>``, read
        a chunk at a time, and ``files/files.json`` listing them."""
        if self.uploads is None:
            return
        listed: list[dict[str, Any]] = []
        cursor = None
        while True:
            page, cursor = await self.uploads.list(principal, limit=PAGE, cursor=cursor)
            for stored in page:
                listed.append(await self._file(archive, principal, stored))
                if chunk := sink.take():
                    yield chunk
            if cursor is None:
                break
        counts["files"] = len(listed)
        if listed:
            index = {PurePosixPath(FILES_FOLDER, FILES_INDEX): files.dump_json(listed)}
            await asyncio.to_thread(_write, archive, index)

    async def _file(
        self, archive: zipfile.ZipFile, principal: Principal, stored: StoredFile
    ) -> dict[str, Any]:
        assert self.uploads is not None
        path = PurePosixPath(FILES_FOLDER, stored.id, folder_name(stored.name, set()))
        info = zipfile.ZipInfo(str(path), date_time=stored.created_at.timetuple()[:6])
        info.compress_type = zipfile.ZIP_DEFLATED
        _stored, chunks = await self.uploads.open(principal, stored.id)
        entry = await asyncio.to_thread(archive.open, info, "w", force_zip64=True)
        try:
            async for chunk in chunks:
                await asyncio.to_thread(entry.write, chunk)
        finally:
            await asyncio.to_thread(entry.close)
        return {
            "id": stored.id,
            "name": stored.name,
            "type": stored.media_type,
            "size": stored.size,
            "sha256": stored.sha256,
            "createdAt": iso_ms(stored.created_at),
            "path": str(path),
        }

    async def _memories(self, archive: zipfile.ZipFile, owner: str) -> int:
        if self.memories is None:
            return 0
        found = await self.memories.listing(
            owner, statuses=memory_files.EXPORTED, limit=MAX_MEMORIES
        )
        by_agent: dict[str, list] = {}
        for memory in sorted(found, key=lambda m: m.id):
            by_agent.setdefault(memory.agent_id, []).append(memory)
        rendered: dict[PurePosixPath, bytes] = {}
        written = 0
        for agent_id, memories in by_agent.items():
            if not is_safe_name(agent_id, max_length=128):
                continue
            document = memory_files.memory_document(agent_id, owner, memories)
            rel = PurePosixPath("agents", agent_id, memory_files.MEMORY_FOLDER)
            rendered[rel / memory_files.file_name(owner)] = files.dump_json(document)
            written += len(document["memories"])
        await asyncio.to_thread(_write, archive, rendered)
        return written

    async def _account(self, principal: Principal, counts: dict[str, int]) -> bytes:
        me = await self.accounts.me(principal)
        keys = await self.accounts.list_keys(principal)
        try:
            sessions = await self.accounts.list_sessions(principal)
        except AccessDenied:  # a key holder without a browser session
            sessions = []
        document: dict[str, Any] = {
            "owner": me.owner,
            "username": me.username,
            "role": me.role,
            "signedInVia": me.via,
            "mustChangePassword": me.must_change_password,
            "exportedAt": iso_ms(utcnow()),
            "contents": counts,
            "apiKeys": [
                {
                    "name": k.name,
                    "prefix": k.prefix,
                    "createdAt": iso_ms(k.created_at),
                    "lastUsedAt": iso_ms(k.last_used_at) if k.last_used_at else None,
                }
                for k in keys
            ],
            "sessions": [
                {
                    "method": v.session.method,
                    "createdAt": iso_ms(v.session.created_at),
                    "lastSeenAt": iso_ms(v.session.last_seen_at),
                    "userAgent": v.session.user_agent,
                    "address": v.session.client_ip,
                    "current": v.current,
                }
                for v in sessions
            ],
        }
        return files.dump_json(document)
