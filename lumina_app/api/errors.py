"""Every error leaves the API as ``{"error": {"code", "message"}}`` with one status, mapped here."""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount

from lumina_app.domain import (
    AccessDenied,
    AgentUnavailable,
    ConversationBusy,
    InputTooLarge,
    InvalidInput,
    LuminaError,
    NotAuthenticated,
    NotFound,
    QuotaExceeded,
    RequestInProgress,
    StoredBytesExceeded,
    StoreUnavailable,
    TooManyAttempts,
    TooManyRuns,
    TooManyStreams,
    UnsupportedFileType,
    UsernameTaken,
)

_STATUS: list[tuple[type[LuminaError], int]] = [
    (NotAuthenticated, 401),
    (AccessDenied, 403),
    (TooManyAttempts, 429),
    (NotFound, 404),
    (ConversationBusy, 409),
    (AgentUnavailable, 409),
    (RequestInProgress, 409),
    (UsernameTaken, 409),
    (InputTooLarge, 413),
    (StoredBytesExceeded, 413),  # before QuotaExceeded: the first match wins
    (UnsupportedFileType, 415),  # before InvalidInput
    (InvalidInput, 422),
    (TooManyStreams, 429),
    (TooManyRuns, 429),
    (QuotaExceeded, 429),
    (StoreUnavailable, 503),
]

_RETRY_LATER = (TooManyAttempts, TooManyStreams, TooManyRuns, QuotaExceeded)  # Retry-After

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_input",
    429: "rate_limited",
    503: "unavailable",
}


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


def error_response(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    headers = {"Retry-After": "1"} if status == 503 else None
    return JSONResponse(error_body(code, message, **extra), status_code=status, headers=headers)


def status_for(exc: LuminaError) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 400


def lumina_error_response(exc: LuminaError) -> JSONResponse:
    extra = {"runId": exc.run_id} if isinstance(exc, ConversationBusy) else {}
    response = error_response(status_for(exc), exc.code, str(exc), **extra)
    if isinstance(exc, NotAuthenticated):
        response.headers["WWW-Authenticate"] = "Bearer"
    elif isinstance(exc, _RETRY_LATER) and exc.retry_after is not None:
        response.headers["Retry-After"] = str(exc.retry_after)
    return response


# Pydantic names the member of a union it tried in ``loc``: ``str``, ``list[...]``,
# ``function-after[functools.partial(<function min_length_validator at 0x7f…>, ...)]``.
# Those are the schema's insides, not where the input was wrong: left out of messages.
_TYPE_LABELS = frozenset(
    {"str", "int", "float", "bool", "bytes", "none", "dict", "list", "constrained-str"}
)
_OBJECT_REPR = re.compile(r"<[^<>]* at 0x[0-9a-fA-F]+>")


def _field_path(loc: tuple[Any, ...]) -> str:
    parts = [
        str(part)
        for part in loc
        if part != "body"
        and not (isinstance(part, str) and (part in _TYPE_LABELS or any(c in part for c in "[(<")))
    ]
    return ".".join(parts) or "body"


def describe_validation(errors: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for err in errors:
        if err.get("type") == "json_invalid":  # loc is ("body", <character position>)
            reason = (err.get("ctx") or {}).get("error") or err.get("msg", "")
            at = err.get("loc", ())[-1]
            part = f"body is not valid JSON (at character {at}: {reason})"
        else:
            part = f"{_field_path(tuple(err.get('loc', ())))}: {err.get('msg', 'invalid')}"
        part = _OBJECT_REPR.sub("…", part)
        if part not in parts:  # one union's members often fail alike
            parts.append(part)
        if len(parts) == 5:
            break
    return "; ".join(parts)


def unreadable_body(exc: StarletteHTTPException) -> str | None:
    """FastAPI answers 400 "error parsing the body" when ``json.loads`` fails with something
    other than a JSON syntax error: the body is invalid input like any malformed JSON (422)."""
    if exc.status_code != 400 or exc.detail != "There was an error parsing the body":
        return None
    cause = exc.__cause__
    if isinstance(cause, UnicodeDecodeError):
        return f"body is not valid JSON (not UTF-8 text at byte {cause.start})"
    if isinstance(cause, RecursionError):
        return "body is not valid JSON (nested too deeply)"
    if isinstance(cause, ValueError):
        return "body is not valid JSON"
    return None


_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def allowed_methods(request: Request, catch_all: Any = None) -> str | None:
    """The methods some API route serves at this path (all of them: GET, PATCH and DELETE of
    a conversation are three routes). Mounts (Reflex's app at "") are not API routes, nor
    the catch-alls (``unmatched``, and ``catch_all`` if given). A path the API's schema
    names literally (``/memories/forget``) has the methods listed there, though a templated
    sibling (``/memories/{memory_id}``) would match it too."""
    literal = _schema_methods(request)
    if literal:
        return ", ".join(literal)
    allowed = []
    skipped = {unmatched} if catch_all is None else {unmatched, catch_all}
    for method in _METHODS:
        scope = {**request.scope, "method": method}
        for route in request.app.router.routes:
            if isinstance(route, Mount) or getattr(route, "endpoint", None) in skipped:
                continue
            if route.matches(scope)[0] is Match.FULL:
                allowed.append(method)
                break
    return ", ".join(allowed) or None


def _schema_methods(request: Request) -> list[str]:
    """The methods the OpenAPI schema lists for exactly this path (none: not named there)."""
    openapi = getattr(request.app, "openapi", None)
    if openapi is None:
        return []
    operations = openapi().get("paths", {}).get(request.url.path, {})
    return [method for method in _METHODS if method.lower() in operations]


def no_such_endpoint(request: Request) -> JSONResponse:
    return error_response(404, "not_found", f"no such endpoint: {request.url.path}")


async def unmatched(request: Request) -> JSONResponse:
    """What no API route serves. Registered last under /api/ (and /healthz): on the real
    server Reflex mounts its app at "" after these routes, so without this an unknown path
    or method got Reflex's plain-text 404 instead of a JSON error."""
    return not_served(request, allowed_methods(request))


def not_served(request: Request, allowed: str | None) -> JSONResponse:
    """404 where no route serves the path, else 405 naming the ``allowed`` methods."""
    if allowed is None:
        return no_such_endpoint(request)
    response = error_response(
        405, "method_not_allowed", f"{request.method} is not allowed here (allowed: {allowed})"
    )
    response.headers["Allow"] = allowed
    return response


def install_error_handlers(api: FastAPI) -> None:
    @api.exception_handler(LuminaError)
    async def _lumina(_request: Request, exc: LuminaError) -> JSONResponse:
        return lumina_error_response(exc)

    @api.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "invalid_input", describe_validation(list(exc.errors())))

    @api.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        unreadable = unreadable_body(exc)
        if unreadable:
            return error_response(422, "invalid_input", unreadable)
        code = _HTTP_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        response = error_response(exc.status_code, code, message)
        if exc.headers:
            response.headers.update(exc.headers)
        return response
