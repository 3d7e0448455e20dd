"""Typed errors carrying what the server said: its ``code`` and ``message`` (Lumina's
``{"error": {"code", "message"}}``, or the OpenAI-shaped doors' ``{"error": {"message",
"type", "code"}}``) and the HTTP status."""

from __future__ import annotations

from typing import Any

import httpx


class LuminaError(Exception):
    """Anything the client could not do."""


class LuminaConnectionError(LuminaError):
    """The server could not be reached (or did not answer in time)."""


class APIError(LuminaError):
    """The server answered with an error."""

    def __init__(
        self, status: int, code: str, message: str, body: dict[str, Any] | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body or {}


class BadRequestError(APIError):
    """400 / 422: the input was refused (``message`` says which field and why)."""


class AuthenticationError(APIError):
    """401: no key, or a key the server does not know."""


class PermissionDeniedError(APIError):
    """403: e.g. a remote client while the server accepts only loopback callers."""


class NotFoundError(APIError):
    """404: missing, malformed, or another owner's id (they look the same)."""


class ConflictError(APIError):
    """409: e.g. a run is already going in this conversation (``run_id`` names it)."""

    @property
    def run_id(self) -> str | None:
        return self.body.get("error", {}).get("runId")


class PayloadTooLargeError(APIError):
    """413: past one of the server's size limits (the message names it)."""


class RateLimitError(APIError):
    """429: too many at once; ``retry_after`` seconds, when the server said."""

    retry_after: float | None = None


class ServerError(APIError):
    """5xx: the server (or a store behind it) failed; 503 is usually temporary."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: BadRequestError,
    429: RateLimitError,
}


def error_from(response: httpx.Response) -> APIError:
    """The typed error for an error response (whatever its body)."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict):
        code = str(detail.get("code") or detail.get("type") or "error")
        message = str(detail.get("message") or response.reason_phrase)
    else:
        code, message = "error", response.text[:500] or response.reason_phrase
    kind = _BY_STATUS.get(response.status_code)
    if kind is None:
        kind = ServerError if response.status_code >= 500 else APIError
    error = kind(response.status_code, code, message, body if isinstance(body, dict) else None)
    if isinstance(error, RateLimitError):
        retry = response.headers.get("retry-after")
        error.retry_after = float(retry) if retry and retry.isdigit() else None
    return error
