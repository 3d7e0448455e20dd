"""Imports of other products' chat exports (ChatGPT, Claude, Open WebUI, LibreChat) and
pasted memory blocks: ``POST /api/v1/imports`` (202 + an id), ``GET /api/v1/imports/{id}``,
and ``POST /api/v1/imports/preview`` (what would be imported, nothing stored)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, File, Form, Query, UploadFile
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from lumina_app.api.auth import Caller
from lumina_app.api.deps import ImportsDep
from lumina_app.api.schemas import copied
from lumina_app.domain import InvalidInput
from lumina_app.services.imports import ImportJob, ImportSource, Preview

router = APIRouter(prefix="/api/v1", tags=["imports"])


class PreviewOut(BaseModel):
    source: ImportSource
    conversations: int
    messages: int
    branchesSkipped: int
    facts: int = Field(description="a memory block: the facts it holds")
    first: datetime | None = Field(description="the earliest message's time")
    last: datetime | None = Field(description="the latest message's time")
    titles: list[str] = Field(description="the first few titles, as plain text")

    @classmethod
    def of(cls, p: Preview) -> PreviewOut:
        return copied(cls, p)


class ImportOut(BaseModel):
    importId: str
    status: str = Field(description="running | done | failed")
    source: ImportSource
    agentId: str
    extractMemories: bool
    total: int = Field(description="conversations (or facts) in the file")
    done: int
    conversationsAdded: int
    conversationsSkipped: int = Field(description="already imported, empty, or refused")
    messagesAdded: int
    branchesSkipped: int = Field(description="other branches of the trees, left out")
    leftOut: int = Field(description="system, tool and empty messages left out")
    memoriesAdded: int
    errors: list[str]
    conversationIds: list[str]
    createdAt: datetime
    finishedAt: datetime | None

    @classmethod
    def of(cls, job: ImportJob) -> ImportOut:
        return copied(cls, job, importId=job.id)


async def _content(file: UploadFile | None, text: str | None, limit: int) -> bytes:
    """The upload's bytes (or a pasted memory block), read at most ``limit`` + 1."""
    if file is not None:
        return await file.read(limit + 1)
    if text:
        return text.encode()
    raise InvalidInput("send the export as the multipart field 'file' (or 'text' for memories)")


FileField = Annotated[UploadFile | None, File(description="the export: .json or .zip")]
TextField = Annotated[str | None, Form(description="source=memories: the pasted block")]
SourceField = Annotated[ImportSource, Form()]


@router.post("/imports/preview", response_model=PreviewOut)
async def preview_import(
    imports: ImportsDep,
    caller: Caller,
    source: SourceField,
    file: FileField = None,
    text: TextField = None,
) -> PreviewOut:
    """How many conversations and messages, and their date range: nothing is stored."""
    return PreviewOut.of(
        await imports.preview(source, await _content(file, text, imports.max_bytes))
    )


@router.post(
    "/imports",
    status_code=202,
    response_model=ImportOut | PreviewOut,
    responses={200: {"model": PreviewOut, "description": "dryRun=true: the preview"}},
)
async def start_import(
    imports: ImportsDep,
    caller: Caller,
    source: SourceField,
    agent_id: Annotated[str, Form(alias="agentId")],
    file: FileField = None,
    text: TextField = None,
    extract_memories: Annotated[bool, Form(alias="extractMemories")] = False,
    memories_from: Annotated[ImportSource, Form(alias="memoriesFrom")] = ImportSource.CHATGPT,
    dry_run: Annotated[bool, Query(alias="dryRun")] = False,
) -> ImportOut | JSONResponse:
    """The whole file is checked first (a bad one: 4xx, nothing stored); then it is
    imported in the background: poll ``GET /api/v1/imports/{importId}``."""
    data = await _content(file, text, imports.max_bytes)
    if dry_run:
        preview = PreviewOut.of(await imports.preview(source, data))
        return JSONResponse(preview.model_dump(mode="json"), status_code=200)
    job = await imports.start_import(
        caller,
        source=source,
        data=data,
        agent_id=agent_id,
        extract_memories=extract_memories,
        memories_from=memories_from,
    )
    return ImportOut.of(job)


@router.get("/imports/{import_id}", response_model=ImportOut)
async def get_import(import_id: str, imports: ImportsDep, caller: Caller) -> ImportOut:
    """Progress and result; another owner's import is a 404."""
    return ImportOut.of(imports.get(caller, import_id))
