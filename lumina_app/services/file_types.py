"""What an upload is, judged by its bytes, never its name; and the name it may keep
(docs/FILES.md)."""

from __future__ import annotations

import codecs
import unicodedata

from lumina_app.domain import InvalidInput, UnsupportedFileType

POLYGLOT_WINDOW = 64 * 1024  # an image or PDF with markup in this much of it is refused
MARKUP_WINDOW = 1024  # text with markup this near its start is HTML or SVG
MAX_NAME_CHARS = 200
RASTER_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
)
_MARKUP = (b"<!doctype html", b"<html", b"<svg", b"<script")
# Text whose name says what text it is; any other text is text/plain.
_TEXT_BY_EXTENSION = {
    "md": "text/markdown",
    "markdown": "text/markdown",
    "csv": "text/csv",
    "json": "application/json",
}


def sniff(head: bytes, *, is_text: bool, name: str) -> str:
    """The media type of a file that starts with ``head`` (its first 64 KiB or all of
    it); ``is_text``: the whole file is UTF-8 without a NUL byte. UnsupportedFileType
    (a 415) for HTML, SVG, a polyglot and any other binary."""
    lowered = head[:POLYGLOT_WINDOW].lower()
    kind = _magic(head)
    if kind is not None:
        if any(mark in lowered for mark in _MARKUP):
            raise UnsupportedFileType(
                f"unsupported file type: {kind} with HTML, SVG or script inside (a polyglot)"
            )
        return kind
    if not is_text:
        raise UnsupportedFileType(
            "unsupported file type: accepted are PNG, JPEG, GIF, WebP, PDF and UTF-8 text"
        )
    if any(mark in lowered[:MARKUP_WINDOW] for mark in _MARKUP):
        raise UnsupportedFileType("unsupported file type: HTML and SVG are not accepted")
    extension = name.rpartition(".")[2].lower() if "." in name else ""
    return _TEXT_BY_EXTENSION.get(extension, "text/plain")


def _magic(head: bytes) -> str | None:
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def clean_name(raw: str) -> str:
    """NFC, without control or bidi characters, at most 200 characters (the extension
    kept). A path (``/`` or ``\\``) or nothing left is a 422: nothing is stored."""
    name = unicodedata.normalize("NFC", raw)
    if "/" in name or "\\" in name:
        raise InvalidInput("a file name may not hold a path ('/' or '\\')")
    name = "".join(c for c in name if unicodedata.category(c) not in ("Cc", "Cf", "Cs"))
    name = name.strip()
    if name in ("", ".", ".."):
        raise InvalidInput("the file needs a name")
    if len(name) <= MAX_NAME_CHARS:
        return name
    stem, dot, extension = name.rpartition(".")
    if not (dot and stem and len(extension) <= 16):
        return name[:MAX_NAME_CHARS].rstrip()
    return stem[: MAX_NAME_CHARS - len(extension) - 1].rstrip() + "." + extension


class TextCheck:
    """Whether bytes fed in pieces are UTF-8 text without NUL bytes."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self.ok = True

    def feed(self, piece: bytes, *, final: bool = False) -> None:
        if not self.ok:
            return
        if b"\0" in piece:
            self.ok = False
            return
        try:
            self._decoder.decode(piece, final=final)
        except UnicodeDecodeError:
            self.ok = False
