"""An SSE response built without Starlette's ``Response.__init__``.

Why: ``Response.__init__`` renders the body (``b""`` when there is none) and
``init_headers`` then adds ``content-length: 0``, which a real server (granian) obeys by
ending the response before the first frame. So :func:`bare_init` sets what ``__init__``
sets — ``status_code``, ``background``, ``raw_headers`` — leaving out ``body``, with the
headers rendered as ``init_headers`` renders them (lower-cased latin-1, the text media type
with its charset), built once by :func:`raw_headers`. What it relies on: ``__init__`` sets
nothing else a response's ``__call__`` or the middleware read. Tested on Starlette 1.10.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import Response

from lumina_app.platform.versions import require

TESTED = "1"


def check() -> None:
    require("starlette", TESTED, __name__)


def raw_headers(headers: Mapping[str, str], media_type: str) -> list[tuple[bytes, bytes]]:
    """``headers`` and the content type as ``Response.init_headers`` renders them, without
    the content length."""
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    raw.append((b"content-type", media_type.encode("latin-1")))
    return raw


def bare_init(response: Response, headers: list[tuple[bytes, bytes]]) -> None:
    """What ``Response.__init__`` sets, but the body: status 200, no background task, a copy
    of ``headers`` (from :func:`raw_headers`)."""
    response.status_code = 200
    response.background = None
    response.raw_headers = list(headers)
