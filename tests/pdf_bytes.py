"""PDFs written by hand for the tests (no PDF writer needed): pages of text, and a page
whose content stream is a FlateDecode bomb."""

from __future__ import annotations

import zlib


def _escape(text: str) -> bytes:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")


def stream(data: bytes, *, deflated: bool = False) -> bytes:
    flate = b" /Filter /FlateDecode" if deflated else b""
    return b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(data), flate, data)


def pdf_of(objects: list[bytes]) -> bytes:
    """Objects numbered from 1 (1 the catalog), with a correct cross-reference table."""
    out = b"%PDF-1.4\n"
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


def text_pdf(*pages: str) -> bytes:
    """One page per string, its text in Helvetica (object 3 the font, then a page and its
    content stream for each)."""
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(pages)),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 600 200] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i)
        )
        objects.append(stream(b"BT /F1 12 Tf 20 100 Td (%s) Tj ET" % _escape(text)))
    return pdf_of(objects)


def bomb_pdf(inflated_bytes: int) -> bytes:
    """A small PDF whose one page's content stream inflates to ``inflated_bytes``."""
    packer = zlib.compressobj(9)
    block = b"0" * (1024 * 1024)
    body = b"".join(packer.compress(block) for _ in range(inflated_bytes // len(block)))
    body += packer.flush()
    return pdf_of(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R >>",
            stream(body, deflated=True),
        ]
    )
