"""Errors of the OpenAI-compatible routes in OpenAI's shape, ``{"error": {"message", "type",
"param", "code"}}``, with the status the SDKs map to their exception classes
(BadRequestError, AuthenticationError, PermissionDeniedError, NotFoundError, ConflictError,
UnprocessableEntityError, RateLimitError, InternalServerError).

Lumina's statuses are kept (401/403/404/409/413/429/503), except that invalid input is a 400
as OpenAI answers it, not Lumina's 422: the SDKs raise BadRequestError for it."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from lumina_app.api.auth import AuthenticatedRoute
from lumina_app.api.errors import (
    allowed_methods,
    describe_validation,
    status_for,
    unreadable_body,
)
from lumina_app.domain import ConversationBusy, LuminaError, NotAuthenticated

OPENAI_PREFIX = "/v1/"

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    503: "service_unavailable_error",
}


def openai_error(
    status: int, message: str, code: str | None = None, *, param: str | None = None
) -> JSONResponse:
    body = {
        "error": {
            "message": message,
            "type": _TYPES.get(status, "api_error"),
            "param": param,
            "code": code,
        }
    }
    headers = {"Retry-After": "1"} if status == 503 else None
    return JSONResponse(body, status_code=status, headers=headers)


def from_lumina(exc: LuminaError) -> JSONResponse:
    status = status_for(exc)
    status = 400 if status == 422 else status
    response = openai_error(status, str(exc), exc.code)
    if isinstance(exc, ConversationBusy):
        response.headers["X-Lumina-Run-Id"] = exc.run_id
    if isinstance(exc, NotAuthenticated):
        response.headers["WWW-Authenticate"] = "Bearer"
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


def from_http(exc: StarletteHTTPException) -> JSONResponse:
    unreadable = unreadable_body(exc)
    if unreadable:
        return openai_error(400, unreadable, "invalid_json")
    message = exc.detail if isinstance(exc.detail, str) else "request refused"
    status = 400 if exc.status_code == 422 else exc.status_code  # as from_lumina
    response = openai_error(status, message, None)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


class OpenAIRoute(AuthenticatedRoute):
    """An authenticated route whose every error (auth, validation, Lumina's own, HTTP) leaves
    in OpenAI's shape: clients of these routes are OpenAI SDKs, not Lumina's."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def openai_shaped(request: Request) -> Response:
            try:
                return await handler(request)
            except LuminaError as exc:
                return from_lumina(exc)
            except RequestValidationError as exc:
                return openai_error(400, describe_validation(list(exc.errors())), "invalid_request")
            except StarletteHTTPException as exc:
                return from_http(exc)

        return openai_shaped


def openai_router() -> APIRouter:
    """A router of OpenAI-compatible routes under /v1: every error in OpenAI's shape."""
    return APIRouter(
        prefix="/v1",
        tags=["openai"],
        route_class=OpenAIRoute,
        responses={400: {"description": "Invalid request (OpenAI's error shape)"}},
    )


async def openai_unmatched(request: Request) -> JSONResponse:
    """What no route under /v1/ serves, in OpenAI's shape: 405 (with ``Allow``) for a
    method a path does not take, else 404."""
    allowed = allowed_methods(request, catch_all=openai_unmatched)
    if allowed is None:
        return openai_error(404, f"no such endpoint: {request.method} {request.url.path}", None)
    message = f"{request.method} is not allowed here (allowed: {allowed})"
    response = openai_error(405, message, "method_not_allowed")
    response.headers["Allow"] = allowed
    return response
