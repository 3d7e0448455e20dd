"""The contract of the file store (``sql.files.FileStore``): uploaded files, their bytes
stored once per owner and content (docs/FILES.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

CHUNK_BYTES = 512 * 1024  # one chunk row at most
TEXT_STATUSES = ("ok", "empty", "refused", "failed")


@dataclass(frozen=True, slots=True)
class FileText:
    """The text read out of a file once (``lumina_file_text``, per blob): ``status`` one of
    TEXT_STATUSES, ``note`` why it is cut, lossy or failed; ``pages`` for a PDF."""

    status: str
    text: str = ""
    pages: int | None = None
    note: str | None = None

    @property
    def chars(self) -> int:
        return len(self.text)


@dataclass(frozen=True, slots=True)
class StoredFile:
    id: str  # file-<24 hex>
    owner: str
    name: str
    media_type: str
    size: int
    sha256: str
    created_at: datetime
    text: FileText | None = None  # on an upload's answer only: what was read out of it


class FileRecords(Protocol):
    async def stored_bytes(self, owner: str) -> int:
        """The bytes of the owner's blobs (each content once)."""

    async def has_blob(self, owner: str, sha256: str) -> bool: ...

    async def add(
        self,
        file: StoredFile,
        chunks: Callable[[], AsyncIterator[bytes]],
        *,
        text: FileText | None = None,
    ) -> StoredFile:
        """The file's row, and its blob from ``chunks`` (each at most ``CHUNK_BYTES``)
        unless the owner has that content already, and ``text`` as the blob's text unless
        it has one: in one transaction."""

    async def text_of(self, owner: str, sha256: str) -> FileText | None:
        """The text already read out of the owner's content, if any (read once per blob)."""

    async def texts(self, owner: str, file_ids: Sequence[str]) -> dict[str, FileText]:
        """The text of each of the owner's files that has one, by file id."""

    async def get(self, owner: str, file_id: str) -> StoredFile | None: ...

    def read(self, owner: str, file_id: str) -> AsyncIterator[bytes]:
        """The file's bytes, chunk by chunk, each read on its own (no connection held
        between them)."""

    async def list(
        self, owner: str, *, limit: int, cursor: str | None
    ) -> tuple[list[StoredFile], str | None]:
        """Newest first; the cursor of the next page, if any."""

    async def delete(self, owner: str, file_id: str) -> bool:
        """The row, and its blob when no other row uses it; False if there was none."""

    async def delete_owner(self, owner: str) -> int:
        """Every file, blob and chunk of the owner: how many files."""
