"""The text read out of an uploaded file (docs/FILES.md), for the context, search and
recall: text types decoded (UTF-8, or UTF-16/32 behind a byte-order mark), a PDF read by
pypdf in a worker process with a wall clock, an address space, a page count and a count of
characters (past any, ``FileRefused``: a 422 and nothing stored). Images have no text."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from lumina_app.domain import FileRefused
from lumina_app.services.file_types import bom_encoding
from lumina_app.storage.files import FileText

__all__ = ["PDF", "TEXT_TYPES", "FileText", "PdfLimits", "TextReader", "decode_text"]

TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/csv", "application/json"})
PDF = "application/pdf"
_WORKER = Path(__file__).with_name("pdf_worker.py")


@dataclass(frozen=True, slots=True)
class PdfLimits:
    seconds: float = 20.0
    memory_bytes: int = 768 * 1024**2
    pages: int = 500
    chars: int = 5_000_000
    workers: int = 2


class TextReader:
    """Reads the text of an upload by its sniffed type; ``None`` for a type without text."""

    def __init__(self, *, max_chars: int, pdf: PdfLimits) -> None:
        self.max_chars = max_chars
        self.pdf = pdf
        self._slots = asyncio.Semaphore(pdf.workers)  # PDF workers at once

    @staticmethod
    def reads(media_type: str) -> bool:
        return media_type in TEXT_TYPES or media_type == PDF

    async def read(self, media_type: str, data: bytes) -> FileText | None:
        if media_type in TEXT_TYPES:
            return await asyncio.to_thread(decode_text, data, self.max_chars)
        if media_type == PDF:
            return _kept(await self._read_pdf(data), self.max_chars)
        return None

    async def _read_pdf(self, data: bytes) -> FileText:
        async with self._slots:
            answer = await _run_worker(data, self.pdf)
        if answer.status == "refused":
            raise FileRefused(f"the PDF was refused: {answer.note}")
        return answer


def decode_text(data: bytes, max_chars: int) -> FileText:
    """A byte-order mark names the encoding, else UTF-8; what does not decode is replaced
    (noted), and the text is kept to ``max_chars`` (noted ``cut``)."""
    encoding = bom_encoding(data) or "utf-8-sig"
    note = None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        text = data.decode(encoding, errors="replace")
        note = f"lossy: bytes that are not {encoding} were replaced"
    text = text.removeprefix("\ufeff")
    return _kept(FileText(status="ok", text=text, note=note), max_chars)


def _kept(found: FileText, max_chars: int) -> FileText:
    if found.status != "ok":
        return found
    if not found.text.strip():
        return FileText(status="empty", pages=found.pages, note=found.note or "no text in it")
    if len(found.text) <= max_chars:
        return found
    note = "; ".join(filter(None, [found.note, f"cut at {max_chars} characters"]))
    return FileText(status="ok", text=found.text[:max_chars], pages=found.pages, note=note)


async def _run_worker(data: bytes, limits: PdfLimits) -> FileText:
    """One process per PDF (not a thread: a parser can hold the GIL), killed at the wall
    clock or when the caller goes; a worker that dies (out of memory) refuses the PDF."""
    args = {
        "memory": limits.memory_bytes,
        "seconds": limits.seconds,
        "pages": limits.pages,
        "chars": limits.chars,
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        str(_WORKER),
        json.dumps(args),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(data), limits.seconds)
    except TimeoutError:
        return FileText(status="refused", note=f"reading it took over {limits.seconds:g} s")
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return _answer(out, proc.returncode)


def _answer(out: bytes, returncode: int | None) -> FileText:
    try:
        answer = json.loads(out) if returncode == 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return FileText(status="refused", note="reading it ran out of memory or time")
    return FileText(
        status=str(answer.get("status")),
        text=str(answer.get("text") or ""),
        pages=answer.get("pages"),
        note=answer.get("note"),
    )
