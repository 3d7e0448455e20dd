"""The Import page: pick another product's chat export, see what it holds, import it with
progress (through ``ImportService``, the same path as /api/v1/imports). The file travels by
Reflex's upload twice — once for the preview, once to import — and is never kept in state."""

from __future__ import annotations

import asyncio

import reflex as rx

from lumina_app.domain import InvalidInput, NotFound
from lumina_app.services.imports import ImportJob, ImportSource
from lumina_app.ui.state.base import AppState

DEFAULT_AGENT = "assistant"
POLL_SECONDS = 0.4
SOURCES = [s.value for s in ImportSource if s is not ImportSource.MEMORIES]


class ImportState(AppState):
    source: str = ImportSource.CHATGPT.value
    learn: bool = False
    summary: str = ""  # the preview: how many conversations and messages, which dates
    titles: list[str] = []
    progress: str = ""
    result: str = ""
    importing: bool = False
    import_id: str = ""
    error: str = ""

    @rx.event
    def load(self) -> None:
        self.summary = self.progress = self.result = self.error = ""
        self.titles, self.importing = [], False

    @rx.event
    def set_source(self, value: str) -> None:
        self.source = value if value in SOURCES else ImportSource.CHATGPT.value
        self.summary, self.titles, self.error = "", [], ""

    @rx.event
    def set_learn(self, value: bool) -> None:
        self.learn = bool(value)

    async def _read(self, files: list[rx.UploadFile]) -> bytes | None:
        if not files:
            self.error = "Choose a file first."
            return None
        imports = self._services().imports
        assert imports is not None
        return await files[0].read(imports.max_bytes + 1)

    @rx.event
    async def preview(self, files: list[rx.UploadFile]):
        self.error = self.result = ""
        data = await self._read(files)
        if data is None:
            return
        try:
            seen = await self._services().imports.preview(ImportSource(self.source), data)
        except InvalidInput as exc:
            self.summary, self.titles, self.error = "", [], str(exc)
            return
        dates = (
            f", {seen.first.date().isoformat()} to {seen.last.date().isoformat()}"
            if seen.first and seen.last
            else ""
        )
        skipped = (
            f"; {seen.branches_skipped} other branches left out" if seen.branches_skipped else ""
        )
        self.summary = (
            f"{seen.conversations} conversations, {seen.messages} messages{dates}{skipped}"
        )
        self.titles = seen.titles

    @rx.event
    async def start_import(self, files: list[rx.UploadFile]):
        data = await self._read(files)
        if data is not None:
            return await self._begin(ImportSource(self.source), data)

    @rx.event
    async def remember(self, form: dict):
        origin = ImportSource(form.get("origin") or ImportSource.CHATGPT.value)
        return await self._begin(ImportSource.MEMORIES, str(form.get("facts", "")).encode(), origin)

    async def _begin(self, source: ImportSource, data: bytes, origin=ImportSource.CHATGPT):
        self.error = self.result = ""
        try:
            job = await self._services().imports.start_import(
                self._caller(),
                source=source,
                data=data,
                agent_id=self.agent_id or DEFAULT_AGENT,
                extract_memories=self.learn,
                memories_from=origin,
            )
        except (InvalidInput, NotFound) as exc:
            self.error = str(exc)
            return None
        self.import_id, self.importing = job.id, True
        self.progress = f"Importing… 0 of {job.total}"
        return ImportState.follow

    @rx.event(background=True)
    async def follow(self):
        """Poll the import until it is over, a short lock each time."""
        while True:
            async with self:
                try:
                    job = self._services().imports.get(self._caller(), self.import_id)
                except NotFound:
                    self.importing = False
                    return
                self.progress = f"Importing… {job.done} of {job.total}"
                if job.status != "running":
                    self.importing, self.progress = False, ""
                    self.result = _result(job)
                    self.error = "; ".join(job.errors[:3])
                    return
            await asyncio.sleep(POLL_SECONDS)


def _result(job: ImportJob) -> str:
    if job.source is ImportSource.MEMORIES:
        return (
            f"{job.memories_added} memories added ({job.total - job.memories_added} already known)."
        )
    learnt = f", {job.memories_added} memories learnt" if job.extract_memories else ""
    return (
        f"{job.conversations_added} conversations added, {job.conversations_skipped} skipped "
        f"(already imported or empty), {job.messages_added} messages{learnt}; "
        f"{job.branches_skipped} other branches left out."
    )
