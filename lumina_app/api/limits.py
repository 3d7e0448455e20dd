"""Request body limit, enforced before anything is buffered: a declared Content-Length
over the limit is refused at once, and a streamed body is cut off as soon as it passes it."""

from __future__ import annotations

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lumina_app.api.errors import error_response
from lumina_app.api.openai_errors import OPENAI_PREFIX, openai_error
from lumina_app.settings import get_settings


def _too_large(limit: int) -> str:
    return f"request body exceeds {limit} bytes"


class _TooLarge(HTTPException):
    """An HTTPException so FastAPI's body parsing passes it through as a 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large(limit))


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, *, max_bytes: int | None = None) -> None:
        self.app = app
        self._max_bytes = max_bytes

    @property
    def max_bytes(self) -> int:
        """Read lazily: building the app must not read (or fail on) settings at import."""
        return self._max_bytes or get_settings().max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_bytes
            except ValueError:
                too_big = False
            if too_big:
                await self._refuse(scope, receive, send)
                return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The same response as every other error, closing the connection: the rest of the
        body is never read, so the connection cannot carry another request."""
        if scope.get("path", "").startswith(OPENAI_PREFIX):
            response = openai_error(413, _too_large(self.max_bytes), "too_large")
        else:
            response = error_response(413, "too_large", _too_large(self.max_bytes))
        response.headers["Connection"] = "close"
        await response(scope, receive, send)
