"""Uploaded files (#48, part 1; docs/FILES.md): checked as they are read (size, type
sniffed from the bytes, name), then stored once per owner and content; read back by
their owner only."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import AsyncIterator, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import Protocol

from lumina_app.domain import (
    InputTooLarge,
    InvalidInput,
    NotFound,
    Principal,
    StoredBytesExceeded,
    utcnow,
)
from lumina_app.services.file_text import FileText, TextReader
from lumina_app.services.file_types import (
    POLYGLOT_WINDOW,
    RASTER_IMAGES,
    TextCheck,
    clean_name,
    sniff,
)
from lumina_app.storage.files import CHUNK_BYTES, FileRecords, StoredFile

__all__ = ["RASTER_IMAGES", "FileNotFound", "FileService", "FileText", "StoredFile", "Upload"]

_FILE_ID = re.compile(r"file-[0-9a-f]{24}")


class FileNotFound(NotFound):
    def __init__(self, file_id: str) -> None:
        super().__init__(f"file {file_id[:64]!r} not found")


class Upload(Protocol):
    """What is uploaded (Starlette's ``UploadFile``): read in pieces, then again."""

    async def read(self, size: int = -1) -> bytes: ...

    async def seek(self, offset: int) -> None: ...


@dataclass(eq=False, repr=False)
class FileService:
    records: FileRecords
    _: KW_ONLY
    max_bytes: int
    max_bytes_per_owner: int  # 0: no limit
    reader: TextReader

    async def upload(self, principal: Principal, *, name: str, source: Upload) -> StoredFile:
        """Read once to hash, size and sniff it (one chunk in memory at a time); refused
        (4xx) with nothing stored, or stored from a second read."""
        clean = clean_name(name)
        digest, text, head, size = hashlib.sha256(), TextCheck(), b"", 0
        while piece := await source.read(CHUNK_BYTES):
            size += len(piece)
            if size > self.max_bytes:
                raise InputTooLarge(
                    f"the file is over {self.max_bytes} bytes (LUMINA_MAX_FILE_BYTES)"
                )
            digest.update(piece)
            text.feed(piece)
            if len(head) < POLYGLOT_WINDOW:
                head += piece[: POLYGLOT_WINDOW - len(head)]
        text.feed(b"", final=True)
        if not size:
            raise InvalidInput("the file is empty")
        media_type = sniff(head, is_text=text.ok, name=clean, text_head=text.head)
        sha256 = digest.hexdigest()
        await self._check_room(principal.owner, sha256, size)
        read = await self._text(principal.owner, sha256, media_type, source)
        stored = StoredFile(
            id="file-" + secrets.token_hex(12),
            owner=principal.owner,
            name=clean,
            media_type=media_type,
            size=size,
            sha256=sha256,
            created_at=utcnow(),
        )

        async def chunks() -> AsyncIterator[bytes]:
            await source.seek(0)
            while piece := await source.read(CHUNK_BYTES):
                yield piece

        return replace(await self.records.add(stored, chunks, text=read), text=read)

    async def _text(
        self, owner: str, sha256: str, media_type: str, source: Upload
    ) -> FileText | None:
        """Read once per content: the same bytes uploaded again reuse their text. A PDF
        past a limit raises ``FileRefused`` here, before anything is stored."""
        if not self.reader.reads(media_type):
            return None
        known = await self.records.text_of(owner, sha256)
        if known is not None:
            return known
        await source.seek(0)
        return await self.reader.read(media_type, await source.read())

    async def texts(self, owner: str, file_ids: Sequence[str]) -> dict[str, FileText]:
        """The text of each of the owner's files that has one (another owner's ids and
        files without text are absent)."""
        return await self.records.texts(owner, file_ids)

    async def _check_room(self, owner: str, sha256: str, size: int) -> None:
        """Bytes the owner has already cost nothing more; new ones must fit the quota."""
        if not self.max_bytes_per_owner or await self.records.has_blob(owner, sha256):
            return
        have = await self.records.stored_bytes(owner)
        if have + size > self.max_bytes_per_owner:
            raise StoredBytesExceeded(
                f"this owner's files hold {have} bytes and this one has {size}; "
                "delete files to make room",
                setting="LUMINA_MAX_FILE_BYTES_PER_OWNER",
                limit=self.max_bytes_per_owner,
                retry_after=None,
            )

    async def get(self, principal: Principal, file_id: str) -> StoredFile:
        """Someone else's file, an unknown or a malformed id: all the same 404."""
        found = None
        if _FILE_ID.fullmatch(file_id):
            found = await self.records.get(principal.owner, file_id)
        if found is None:
            raise FileNotFound(file_id)
        return found

    async def open(
        self, principal: Principal, file_id: str
    ) -> tuple[StoredFile, AsyncIterator[bytes]]:
        """The file and its bytes, to be read chunk by chunk."""
        found = await self.get(principal, file_id)
        return found, self.records.read(principal.owner, found.id)

    async def list(
        self, principal: Principal, *, limit: int, cursor: str | None
    ) -> tuple[list[StoredFile], str | None]:
        return await self.records.list(principal.owner, limit=limit, cursor=cursor)

    async def delete(self, principal: Principal, file_id: str) -> None:
        if not (
            _FILE_ID.fullmatch(file_id) and await self.records.delete(principal.owner, file_id)
        ):
            raise FileNotFound(file_id)

    async def delete_owner(self, owner: str) -> int:
        """An account's deletion: every file it has."""
        return await self.records.delete_owner(owner)
