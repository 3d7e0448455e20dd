"""Reads a PDF's text in a process of its own (run by ``services/file_text.py`` as
``python -I pdf_worker.py LIMITS``): the PDF on stdin, one JSON answer on stdout. Its
address space and CPU time are capped before it reads a byte, so a PDF bomb ends here and
never in the server. Imports nothing of Lumina (``-I``: not even the script's folder)."""

from __future__ import annotations

import io
import json
import resource
import sys


def main() -> None:
    limits = json.loads(sys.argv[1])
    memory, seconds = int(limits["memory"]), int(limits["seconds"]) + 1
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
    data = sys.stdin.buffer.read()
    answer = read(data, max_pages=int(limits["pages"]), max_chars=int(limits["chars"]))
    sys.stdout.write(json.dumps(answer, ensure_ascii=False))


def read(data: bytes, *, max_pages: int, max_chars: int) -> dict:
    """``refused`` past a limit (pypdf's own decompression limits included), ``failed``
    for a PDF pypdf cannot parse, else the pages' text joined by blank lines."""
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError

    pages = None
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = len(reader.pages)
        if pages > max_pages:
            return _refused(f"the PDF has {pages} pages, over {max_pages}", pages)
        parts, chars = [], 0
        for page in reader.pages:
            _inflate(page)
            part = page.extract_text() or ""
            chars += len(part) + 2
            if chars > max_chars:
                return _refused(f"the PDF's text runs over {max_chars} characters", pages)
            parts.append(part)
    except (LimitReachedError, MemoryError, RecursionError) as exc:
        return _refused(f"the PDF passes a reading limit ({type(exc).__name__})", pages)
    except Exception as exc:
        note = f"the PDF could not be read: {type(exc).__name__}: {exc}"
        return {"status": "failed", "text": "", "pages": pages, "note": note[:255]}
    return {"status": "ok", "text": "\n\n".join(parts), "pages": pages, "note": None}


def _inflate(page) -> None:
    """Decode the page's content first: ``extract_text`` swallows pypdf's decompression
    limit (a bomb would read as an empty page), ``get_data`` raises it."""
    contents = page.get_contents()
    if contents is not None:
        contents.get_data()


def _refused(note: str, pages: int | None) -> dict:
    return {"status": "refused", "text": "", "pages": pages, "note": note}


if __name__ == "__main__":
    main()
