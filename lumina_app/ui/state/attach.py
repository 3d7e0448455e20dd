"""Files attached in the composer before sending (#48): the paperclip, a drop and a paste
all upload through Reflex's upload to ``FileService.upload`` for the page's own caller —
the same checks, names, limits and quota as ``POST /api/v1/files``. Each accepted file is
a chip; a refused one is said next to the composer and leaves no chip.

The chips live here, on the server: a send takes its file ids from this list (and checks
that the page showed the same ones), never from the client's word."""

from __future__ import annotations

import contextlib

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

    @rx.event
    async def upload(self, files: list[rx.UploadFile]):
        """Each file through FileService.upload; a chip for each one accepted."""
        try:
            await self._take(files)
        finally:
            self._done += 1
            self._count()

    async def _take(self, files: list[rx.UploadFile]) -> None:
        service, caller = self._services().files, self._caller()
        assert service is not None
        refused, room = [], max_files() - len(self.chips)
        for file in files:
            name = file.filename or "file"
            if room <= 0:
                refused.append(f"{name} was not attached: a message can carry {max_files()} files.")
                continue
            try:
                stored = await service.upload(caller, name=name, source=file)
            except LuminaError as exc:
                refused.append(refusal(name, exc, max_bytes=service.max_bytes))
                continue
            self.chips = [*self.chips, stored_view(stored)]
            room -= 1
        self.refused = " ".join(refused)

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
