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


def sniff(head: bytes, *, is_text: bool, name: str, text_head: str = "") -> str:
    """The media type of a file that starts with ``head`` (its first 64 KiB or all of
    it); ``is_text``: the whole file is text (``TextCheck``), ``text_head`` its first
    characters. UnsupportedFileType (a 415) for HTML, SVG, a polyglot and any other
    binary."""
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
            "unsupported file type: accepted are PNG, JPEG, GIF, WebP, PDF and UTF-8 text "
            "(or UTF-16/32 with a byte-order mark)"
        )
    decoded = text_head[:MARKUP_WINDOW].lower().encode("utf-8", "replace")
    if any(mark in lowered[:MARKUP_WINDOW] or mark in decoded for mark in _MARKUP):
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


# Text in UTF-16 or UTF-32 is accepted when a byte-order mark says so (the longest first:
# UTF-32 LE's mark starts with UTF-16 LE's).
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def bom_encoding(head: bytes) -> str | None:
    """The UTF-16/32 encoding a byte-order mark at the start names, if any."""
    for bom, encoding in BOMS:
        if head.startswith(bom):
            return encoding
    return None


class TextCheck:
    """Whether bytes fed in pieces are text: UTF-8 without NUL bytes, or UTF-16/32 behind
    a byte-order mark (decoded leniently: the reading notes what it replaced). ``head``:
    the first characters, for the markup check (HTML in UTF-16 is still HTML)."""

    def __init__(self) -> None:
        self._decoder: codecs.IncrementalDecoder | None = None
        self._start = b""
        self.ok = True
        self.encoding = "utf-8"
        self.head = ""

    def feed(self, piece: bytes, *, final: bool = False) -> None:
        if not self.ok:
            return
        if self._decoder is None:
            self._start += piece
            if len(self._start) < 4 and not final:
                return
            piece, self._start = self._start, b""
            self.encoding = bom_encoding(piece) or "utf-8"
            lenient = "replace" if self.encoding != "utf-8" else "strict"
            self._decoder = codecs.getincrementaldecoder(self.encoding)(lenient)
        if self.encoding == "utf-8" and b"\0" in piece:
            self.ok = False
            return
        try:
            decoded = self._decoder.decode(piece, final=final)
        except UnicodeDecodeError:
            self.ok = False
            return
        if len(self.head) < MARKUP_WINDOW:
            self.head += decoded[: MARKUP_WINDOW - len(self.head)]
        if "\0" in decoded:
            self.ok = False
