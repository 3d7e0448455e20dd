"""Files attached in the composer before sending (#48): the paperclip, a drop and a paste
all upload through Reflex's upload to ``FileService.upload`` for the page's own caller —
the same checks, names, limits and quota as ``POST /api/v1/files``. Each accepted file is
a chip; a refused one is said next to the composer and leaves no chip.

The chips live here, on the server: a send takes its file ids from this list (and checks
that the page showed the same ones), never from the client's word.

The upload handler is a background event over the upload's chunks
(``rx.upload_files_chunk``): each file is spooled (a memory buffer, then a temporary file;
past the size limit only counted) and stored without holding the page's state, so an
answer streaming in the same tab goes on while a large file is written."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator

import reflex as rx

from lumina_app.domain import LuminaError
from lumina_app.services.files import FileNotFound
from lumina_app.settings import get_settings
from lumina_app.ui.state.base import AppState
from lumina_app.ui.view_models.file_views import FileView, refusal, stored_view, too_big

UPLOAD_ID = "composer-files"


def max_files() -> int:
    """Files one message may carry (LUMINA_MAX_FILES_PER_MESSAGE)."""
    return get_settings().max_files_per_message


class AttachState(AppState):
    chips: list[FileView] = []
    refused: str = ""  # why the last file(s) were not attached
    uploading: bool = False
    percent: int = 0
    # Uploads begun (the drop) and done (the handler): a drop's events and its upload
    # travel apart, so "uploading" is "more begun than done", whichever lands first.
    _begun: int = 0
    _done: int = 0

    def _count(self) -> None:
        self.uploading = self._begun > self._done
        if not self.uploading:
            self.percent = 0

    @rx.event
    def begin(self) -> None:
        """A drop, a paste or the picker: an upload is on its way."""
        self._begun += 1
        self.refused, self.percent = "", 0
        self._count()

    @rx.event
    def progress(self, moved: dict) -> None:
        share = moved.get("progress") if isinstance(moved, dict) else None
        if self.uploading and isinstance(share, int | float):
            self.percent = max(0, min(99, int(share * 100)))

    @rx.event(background=True)
    async def upload(self, chunks: rx.UploadChunkIterator):
        """Each file through FileService.upload; a chip for each one accepted, shown as
        it is stored. The state is held only to read the caller and to add a chip."""
        refused: list[str] = []
        try:
            async with self:
                service, caller = self._services().files, self._caller()
                room = max_files() - len(self.chips)
            assert service is not None
            async for name, source in _files_of(chunks, service.max_bytes):
                with source:
                    if room <= 0:
                        refused.append(
                            f"{name} was not attached: a message can carry {max_files()} files."
                        )
                        continue
                    try:
                        stored = await service.upload(caller, name=name, source=source)
                    except LuminaError as exc:
                        refused.append(refusal(name, exc, max_bytes=service.max_bytes))
                        continue
                room -= 1
                async with self:
                    self.chips = [*self.chips, stored_view(stored)]
        finally:
            async with self:
                if refused:  # (a drop's own refusal, said meanwhile, stays)
                    self.refused = " ".join(refused)
                self._done += 1
                self._count()

    @rx.event
    def rejected(self, held: list[str]) -> None:
        """Files the browser held back, never uploaded: each "name\ncode" (react-dropzone's
        "file-too-large" or "too-many-files")."""
        why = {
            c: [n for n, _, code in (h.partition("\n") for h in held) if code == c]
            for c in ("file-too-large", "too-many-files")
        }
        said = []
        if why["file-too-large"]:
            said.append(too_big(why["file-too-large"], max_bytes=get_settings().max_file_bytes))
        if why["too-many-files"]:
            said.append(f"A message can carry {max_files()} files: attach fewer at once.")
        self.refused = " ".join(said) or "These files could not be attached."

    @rx.event
    def cancel(self):
        """Stop an upload on its way (the uploading chip's ×)."""
        self._done = self._begun
        self._count()
        return rx.cancel_upload(UPLOAD_ID)

    @rx.event
    async def remove(self, file_id: str) -> None:
        """A chip's ×: the file is deleted too (nothing else uses it yet). Only a chip of
        this page can be removed."""
        if file_id not in {c["id"] for c in self.chips}:
            self.refused = "That file is not attached here."
            return
        self.chips = [c for c in self.chips if c["id"] != file_id]
        service = self._services().files
        assert service is not None
        with contextlib.suppress(FileNotFound):
            await service.delete(self._caller(), file_id)

    @rx.event
    def dismiss(self) -> None:
        self.refused = ""

    def hand_over(self, file_ids: list[str]) -> list[FileView]:
        """These chips go with a send, in their order (they come back if it fails)."""
        taken = [c for c in self.chips if c["id"] in file_ids]
        self.chips = [c for c in self.chips if c["id"] not in file_ids]
        self.refused = ""
        return [FileView(**c) for c in taken]

    def give_back(self, files: list[FileView]) -> None:
        """A send that did not start: its files are chips again, before any added since."""
        self.chips = [*files, *self.chips]


class _Spooled:
    """One uploaded file as ``FileService.upload`` reads it (``files.Upload``): in memory,
    on disk past 1 MiB; bytes past ``limit`` are counted, not kept (one more than the
    limit is enough for the service to refuse it as too big)."""

    def __init__(self, limit: int) -> None:
        self.file = tempfile.SpooledTemporaryFile(max_size=1 << 20)  # noqa: SIM115 - closed by __exit__
        self.room = limit + 1

    def write(self, data: bytes) -> None:
        kept = data[: max(self.room, 0)]
        self.file.write(kept)
        self.room -= len(kept)

    async def read(self, size: int = -1) -> bytes:
        return self.file.read(size)

    async def seek(self, offset: int) -> None:
        self.file.seek(offset)

    def __enter__(self) -> _Spooled:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()


async def _files_of(
    chunks: AsyncIterator[rx.UploadChunk], limit: int
) -> AsyncIterator[tuple[str, _Spooled]]:
    """The upload's files one by one, each whole (rewound), named as the browser sent
    them (``FileService.upload`` makes the name safe)."""
    name, current = "", None
    async for chunk in chunks:
        if current is None or chunk.offset == 0 or chunk.filename != name:
            if current is not None:
                await current.seek(0)
                yield name or "file", current
            name, current = chunk.filename, _Spooled(limit)
        current.write(chunk.data)
    if current is not None:
        await current.seek(0)
        yield name or "file", current
