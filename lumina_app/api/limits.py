"""Request body limits, in size and in time, enforced before anything is buffered: a
declared Content-Length over the limit is refused at once, a streamed body is cut off as
soon as it passes it, and a body not whole within LUMINA_BODY_READ_TIMEOUT_SECONDS of the
request's head gets 408 (a sender dripping a byte now and then held its request, and a
connection slot, for as long as it liked). A JSON body nested deeper than
LUMINA_MAX_JSON_DEPTH is refused as it arrives (422; 400 at the OpenAI doors), before any
parser or schema recurses into it."""

from __future__ import annotations

import asyncio
import re

from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lumina_app.api.errors import error_response
from lumina_app.api.openai_errors import OPENAI_PREFIX, openai_error
from lumina_app.settings import get_settings

_NO_BODY = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
_UPLOAD_PATHS = ("/api/v1/imports", "/_upload")  # chat exports (docs/IMPORTS.md)
_FILES_PATH = "/api/v1/files"  # uploaded files (docs/FILES.md)
_MULTIPART_ROOM = 64 * 1024


def _too_large(limit: int) -> str:
    return f"request body exceeds {limit} bytes"


def _too_slow(seconds: float) -> str:
    return f"request body not received within {seconds:g} s"


class _TooLarge(HTTPException):
    """An HTTPException so FastAPI's body parsing passes it through as a 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large(limit))


class _TooDeep(HTTPException):
    """Invalid input found before parsing: FastAPI passes it through like ``_TooLarge``."""

    def __init__(self, limit: int) -> None:
        super().__init__(422, f"body is nested deeper than {limit} levels (LUMINA_MAX_JSON_DEPTH)")


# What can change the nesting: brackets, quotes, and an escape with the byte it escapes
# (a lone backslash ends a chunk: its byte is the next chunk's first).
_STRUCTURE = re.compile(rb'\\.?|["\[\]{}]', re.S)


class _Nesting:
    """How deep a JSON body goes, counted chunk by chunk as it arrives (strings skipped),
    without parsing it: ``feed`` raises ``_TooDeep`` past ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.depth = 0
        self.in_string = False
        self.escaped = False  # the chunk before ended with an escape's backslash

    def feed(self, chunk: bytes) -> None:
        start = 1 if self.escaped and chunk else 0
        self.escaped = self.escaped and not chunk
        for match in _STRUCTURE.finditer(chunk, start):
            token = match.group()
            if token[0] == 0x5C:  # backslash
                self.escaped = self.in_string and len(token) == 1
            elif token == b'"':
                self.in_string = not self.in_string
            elif self.in_string:
                continue
            elif token in (b"[", b"{"):
                self.depth += 1
                if self.depth > self.limit:
                    raise _TooDeep(self.limit)
            else:
                self.depth -= 1


def _is_json(scope: Scope) -> bool:
    """A body FastAPI would parse as JSON: declared so, or not declared at all."""
    declared = dict(scope["headers"]).get(b"content-type")
    return declared is None or b"json" in declared.lower()


class _TooSlow(HTTPException):
    """Raised into the app once the deadline has passed and the 408 is sent (or a response
    had begun): whatever the app does with it is not sent."""

    def __init__(self, seconds: float) -> None:
        super().__init__(408, _too_slow(seconds))


class BodyLimitMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int | None = None,
        read_timeout: float | None = None,
        max_depth: int | None = None,
        max_file_bytes: int | None = None,
    ) -> None:
        self.app = app
        self._max_bytes = max_bytes
        self._max_file_bytes = max_file_bytes
        self._read_timeout = read_timeout
        self._max_depth = max_depth

    @property
    def max_bytes(self) -> int:
        """Read lazily: building the app must not read (or fail on) settings at import."""
        return self._max_bytes or get_settings().max_body_bytes

    def max_bytes_for(self, path: str) -> int:
        """A chat export's upload (the API's and the Import page's) may be larger: up to
        LUMINA_IMPORT_MAX_BYTES plus room for the multipart framing; a file's upload, up
        to LUMINA_MAX_FILE_BYTES plus the same room."""
        if path.startswith(_UPLOAD_PATHS):
            return max(self.max_bytes, get_settings().import_max_bytes + _MULTIPART_ROOM)
        if path == _FILES_PATH:  # an upload of LUMINA_MAX_FILE_BYTES
            file_bytes = self._max_file_bytes or get_settings().max_file_bytes
            return max(self.max_bytes, file_bytes + _MULTIPART_ROOM)
        return self.max_bytes

    @property
    def read_timeout(self) -> float:
        return self._read_timeout or get_settings().body_read_timeout_seconds

    @property
    def max_depth(self) -> int:
        return self._max_depth or get_settings().max_json_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sized = scope["method"] not in _NO_BODY
        limit = self.max_bytes_for(scope.get("path", ""))
        declared = dict(scope["headers"]).get(b"content-length")
        if sized and declared is not None:
            try:
                too_big = int(declared) > limit
            except ValueError:
                too_big = False
            if too_big:
                await _refuse(scope, send, 413, "too_large", _too_large(limit))
                return
        body = _Body(
            scope,
            receive,
            send,
            max_bytes=limit if sized else None,
            read_timeout=self.read_timeout,
            nesting=_Nesting(self.max_depth) if sized and _is_json(scope) else None,
        )
        try:
            await self.app(scope, body.receive, body.send)
        except _TooLarge:
            if not body.started:
                await _refuse(scope, send, 413, "too_large", _too_large(limit))
        except _TooDeep as exc:  # raised where no FastAPI route read the body
            if not body.started:
                await _refuse(scope, send, 422, "invalid_input", exc.detail)
        except _TooSlow:
            pass  # answered when the deadline passed


class _Body:
    """One request's ``receive`` and ``send`` as the app sees them: the body counted against
    its size limit and bounded by its deadline (counted from the request's head). Once the
    body is whole, ``receive`` waits without one (a stream listening for the client to
    leave)."""

    def __init__(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        *,
        max_bytes: int | None,
        read_timeout: float,
        nesting: _Nesting | None = None,
    ) -> None:
        self._scope, self._receive, self._send = scope, receive, send
        self._max_bytes, self._read_timeout = max_bytes, read_timeout
        self._nesting = nesting
        self._deadline = asyncio.get_running_loop().time() + read_timeout
        self._received = 0
        self._whole = False
        self._late = False
        self.started = False  # the app began its response

    async def receive(self) -> Message:
        if self._whole:
            return await self._receive()
        try:
            async with asyncio.timeout_at(self._deadline):
                message = await self._receive()
        except TimeoutError:
            await self._answer_late()
            raise _TooSlow(self._read_timeout) from None
        if message["type"] == "http.request":
            self._received += len(message.get("body", b""))
            if self._max_bytes is not None and self._received > self._max_bytes:
                raise _TooLarge(self._max_bytes)
            if self._nesting is not None:
                self._nesting.feed(message.get("body", b""))
            self._whole = not message.get("more_body", False)
        else:  # http.disconnect
            self._whole = True
        return message

    async def send(self, message: Message) -> None:
        if self._late:
            return  # the 408 went out instead
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)

    async def _answer_late(self) -> None:
        """408 from here, not from the app: the same answer whatever route (FastAPI's,
        Reflex's) was reading, and the connection closed, since the body was never read."""
        if self.started or self._late:
            return
        self._late = True
        await _refuse(
            self._scope, self._send, 408, "request_timeout", _too_slow(self._read_timeout)
        )


async def _refuse(scope: Scope, send: Send, status: int, code: str, message: str) -> None:
    """The same response as every other error, closing the connection: the rest of the
    body is never read, so the connection cannot carry another request."""
    response: JSONResponse
    if scope.get("path", "").startswith(OPENAI_PREFIX):
        status = 400 if status == 422 else status  # invalid input, as OpenAI answers it
        response = openai_error(status, message, code)
    else:
        response = error_response(status, code, message)
    response.headers["Connection"] = "close"
    await send({"type": "http.response.start", "status": status, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})
