"""Uploaded files (#48, part 1; docs/FILES.md): ``POST /api/v1/files`` (multipart field
``file``), ``GET /api/v1/files`` (the caller's, newest first), ``GET`` and ``DELETE
/api/v1/files/{id}``. A download is an attachment the browser neither sniffs nor runs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, File, Query, Response, UploadFile
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from lumina_app.api.auth import AuthenticatedRoute, Caller
from lumina_app.api.deps import FilesDep
from lumina_app.api.schemas import Cursor, copied, error_responses
from lumina_app.services.files import RASTER_IMAGES, StoredFile

router = APIRouter(prefix="/api/v1", tags=["files"], route_class=AuthenticatedRoute)

# What a download may be (the type sniffed at upload; text is served as UTF-8).
DOWNLOAD_TYPES = (
    *sorted(RASTER_IMAGES),
    "application/pdf",
    "text/plain",
    "text/markdown",
    "text/csv",
    "application/json",
)


class TextOut(BaseModel):
    status: str = Field(description="ok | empty | failed (a refused file is not stored)")
    chars: int = Field(description="characters kept")
    pages: int | None = Field(None, description="a PDF's pages")


class FileOut(BaseModel):
    id: str = Field(description="file-<24 hex>")
    name: str = Field(description="the sanitised name")
    type: str = Field(description="the media type sniffed from the bytes")
    size: int
    sha256: str
    createdAt: datetime
    text: TextOut | None = Field(
        None, description="on an upload's answer: the text read out of it (none for images)"
    )

    @classmethod
    def of(cls, f: StoredFile) -> FileOut:
        text = f.text and TextOut(status=f.text.status, chars=f.text.chars, pages=f.text.pages)
        return copied(cls, f, type=f.media_type, text=text)


class FilePage(BaseModel):
    items: list[FileOut]
    nextCursor: str | None


@router.post(
    "/files",
    status_code=201,
    response_model=FileOut,
    response_model_exclude_none=True,
    responses=error_responses(413, 415, 422),
)
async def upload_file(
    files: FilesDep,
    caller: Caller,
    file: Annotated[UploadFile, File(description="PNG, JPEG, GIF, WebP, PDF or UTF-8 text")],
) -> FileOut:
    """The type is sniffed from the bytes (HTML, SVG and other binaries: 415); over
    LUMINA_MAX_FILE_BYTES or the owner's LUMINA_MAX_FILE_BYTES_PER_OWNER: 413; a PDF past
    a reading limit (a bomb, too many pages, too slow): 422. Nothing stored on a 4xx."""
    return FileOut.of(await files.upload(caller, name=file.filename or "", source=file))


@router.get("/files", response_model=FilePage)
async def list_files(
    files: FilesDep,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    after: Annotated[str | None, Query(max_length=200), Cursor] = None,
) -> FilePage:
    """The caller's files, newest first."""
    items, cursor = await files.list(caller, limit=limit, cursor=after)
    return FilePage(items=[FileOut.of(f) for f in items], nextCursor=cursor)


@router.get(
    "/files/{file_id}",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "the bytes, as an attachment (inline: raster images only)",
            "content": {
                t: {"schema": {"type": "string", "format": "binary"}} for t in DOWNLOAD_TYPES
            },
        }
    },
)
async def download_file(
    file_id: str,
    files: FilesDep,
    caller: Caller,
    inline: Annotated[bool, Query(description="show a raster image in the browser")] = False,
) -> StreamingResponse:
    """Streamed chunk by chunk; another owner's id is a 404. (``X-Content-Type-Options:
    nosniff`` is on every response: api/guard.py.)"""
    found, chunks = await files.open(caller, file_id)
    shown = inline and found.media_type in RASTER_IMAGES
    text = found.media_type.startswith("text/") or found.media_type == "application/json"
    return StreamingResponse(
        chunks,
        media_type=found.media_type + ("; charset=utf-8" if text else ""),
        headers={
            "Content-Length": str(found.size),
            "Content-Disposition": disposition(found.name, inline=shown),
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "private",
        },
    )


@router.delete("/files/{file_id}", status_code=204)
async def delete_file(file_id: str, files: FilesDep, caller: Caller) -> Response:
    """The bytes go too when no other file of the owner has them."""
    await files.delete(caller, file_id)
    return Response(status_code=204)


def disposition(name: str, *, inline: bool = False) -> str:
    """RFC 6266 with RFC 5987's ``filename*`` and a plain ASCII fallback."""
    fallback = "".join(
        c if c.isascii() and c.isprintable() and c not in '"\\;%' else "_" for c in name
    )
    kind = "inline" if inline else "attachment"
    return f"{kind}; filename=\"{fallback or 'file'}\"; filename*=UTF-8''{quote(name, safe='')}"
