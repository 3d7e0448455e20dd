"""The file service as the archive uses it (archive/attachments.py ``ArchiveFiles``): an
export reads a message's files, an import uploads the archive's files as the importing
owner's — through ``FileService.upload``, so with the same sniffing, size limit and quota
as any upload."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

from lumina_app.archive.attachments import AttachedFile
from lumina_app.domain import InvalidInput, Principal
from lumina_app.domain.access import Via
from lumina_app.services.files import FileNotFound, FileService, StoredFile

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)


def _facts(stored: StoredFile) -> AttachedFile:
    return AttachedFile(stored.id, stored.name, stored.media_type, stored.size, stored.sha256)


def _operator(owner: str) -> Principal:
    return Principal(owner=owner, via=Via.OPERATOR, name="archive")


class _DiskUpload:
    """A regular file read in pieces off the event loop (``files.Upload``)."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle

    async def read(self, size: int = -1) -> bytes:
        return await asyncio.to_thread(self.handle.read, size)

    async def seek(self, offset: int) -> None:
        await asyncio.to_thread(self.handle.seek, offset)


def _open_regular(path: Path) -> BinaryIO:
    """Open without following a link; a missing file, a folder or a FIFO is refused."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise InvalidInput("the archive lists this file, but it is missing") from None
    except OSError as exc:
        raise InvalidInput(f"cannot be read: {exc.strerror or exc}") from None
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise InvalidInput("not a regular file")
    return handle


class ArchiveFileStore:
    def __init__(self, files: FileService) -> None:
        self.files = files

    async def facts(self, owner: str, file_id: str) -> AttachedFile | None:
        try:
            return _facts(await self.files.get(_operator(owner), file_id))
        except FileNotFound:
            return None

    async def content(self, owner: str, file_id: str) -> AsyncIterator[bytes]:
        _stored, chunks = await self.files.open(_operator(owner), file_id)
        async for chunk in chunks:
            yield chunk

    async def store(self, owner: str, name: str, path: Path) -> AttachedFile:
        handle = await asyncio.to_thread(_open_regular, path)
        try:
            stored = await self.files.upload(
                _operator(owner), name=name, source=_DiskUpload(handle)
            )
        finally:
            await asyncio.to_thread(handle.close)
        return _facts(stored)

    async def drop(self, owner: str, file_id: str) -> None:
        with contextlib.suppress(FileNotFound):  # gone already (deleted meanwhile)
            await self.files.delete(_operator(owner), file_id)
