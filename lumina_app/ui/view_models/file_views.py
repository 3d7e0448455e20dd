"""Files as the chat shows them: a chip in the composer before sending, a thumbnail or a
card in the message after (#48). The browser fetches a file from ``GET /api/v1/files/{id}``
itself, with the same credentials its page socket has (the session cookie, or the loopback
address in local mode), so the bytes never travel through the page's state."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from lumina_app.domain import (
    InputTooLarge,
    LuminaError,
    StoredBytesExceeded,
    UnsupportedFileType,
)
from lumina_app.services.files import RASTER_IMAGES, StoredFile

FILES_URL = "/api/v1/files/"
ACCEPTED = "images (PNG, JPEG, GIF, WebP), PDF and text"


class FileView(TypedDict):
    id: str
    name: str
    type: str
    size: str  # for people: "12 KB"
    image: bool  # a raster image: shown as a thumbnail
    src: str  # an image's thumbnail (the image inline), "" for other files
    href: str  # what a click opens: the image full size, or the file's download


def size_label(size: int) -> str:
    value, unit = float(size), "B"
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            break
        value /= 1000
    if unit == "B":
        return f"{size} B"
    return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"


def file_view(file_id: str, name: str, media_type: str, size: int) -> FileView:
    image = media_type in RASTER_IMAGES
    download = FILES_URL + file_id
    return FileView(
        id=file_id,
        name=name,
        type=media_type,
        size=size_label(size),
        image=image,
        src=download + "?inline=true" if image else "",
        href=download + "?inline=true" if image else download,
    )


def stored_view(stored: StoredFile) -> FileView:
    return file_view(stored.id, stored.name, stored.media_type, stored.size)


def message_files(meta: Mapping[str, Any]) -> list[FileView]:
    """A question's files, as the send stored them in its meta (``[{id, name, type,
    size}]``); anything else there is left out rather than shown broken."""
    listed = meta.get("files")
    if not isinstance(listed, list):
        return []
    return [
        file_view(str(f["id"]), str(f.get("name") or "file"), str(f.get("type") or ""), size)
        for f in listed
        if isinstance(f, dict) and f.get("id") and isinstance(size := f.get("size", 0), int)
    ]


def refusal(name: str, exc: LuminaError, *, max_bytes: int) -> str:
    """Why a file was not attached, said for people (the same checks as the REST upload)."""
    if isinstance(exc, StoredBytesExceeded):
        return f"{name} was not attached: your files are full. Delete some to make room."
    if isinstance(exc, InputTooLarge):
        return f"{name} is too big: files can be up to {size_label(max_bytes)}."
    if isinstance(exc, UnsupportedFileType):
        return f"{name} was not attached: only {ACCEPTED} can be attached."
    return f"{name} was not attached: {exc}"


def too_big(names: Iterable[str], *, max_bytes: int) -> str:
    """Files the browser itself held back (over the per-file limit: never uploaded)."""
    listed = ", ".join(names)
    return f"{listed}: too big to attach (files can be up to {size_label(max_bytes)})."
