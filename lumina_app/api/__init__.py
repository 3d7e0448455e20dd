"""HTTP API mounted on the Reflex app through ``api_transformer`` (OpenAPI at /docs, served
offline: see ``docs``)."""

from __future__ import annotations

from fastapi import FastAPI

from lumina_app.api import (
    routes_account,
    routes_admin,
    routes_agents,
    routes_auth,
    routes_export,
    routes_files,
    routes_health,
    routes_imports,
    routes_memories,
    routes_metrics,
    routes_openai,
    routes_openai_conversations,
    routes_recall,
    routes_responses,
    routes_runs,
    routes_search,
    routes_v1,
)
from lumina_app.api.connection_limits import ConnectionLimitMiddleware, InFlight
from lumina_app.api.docs import install_docs
from lumina_app.api.errors import install_error_handlers, unmatched
from lumina_app.api.guard import GuardMiddleware
from lumina_app.api.limits import BodyLimitMiddleware
from lumina_app.api.mcp import PATH as MCP_PATH
from lumina_app.api.mcp import McpEndpoint
from lumina_app.api.openai_errors import openai_unmatched
from lumina_app.api.schemas import error_responses
from lumina_app.api.sse import StreamsAfterRouting
from lumina_app.settings import Settings


def create_api(settings: Settings | None = None) -> FastAPI:
    """Build the FastAPI app whose routes are served beside the Reflex UI.

    Settings are read when requests arrive, not here: importing the app has no side effects.
    """
    api = FastAPI(
        title="Lumina",
        version=routes_health.VERSION,
        description="Conversations and memory for LLM agents: two route families, SSE streams.",
        docs_url=None,  # install_docs serves both pages without a CDN
        redoc_url=None,
    )
    install_docs(api)
    api.state.settings = settings
    install_error_handlers(api)
    api.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.max_body_bytes if settings else None,
        read_timeout=settings.body_read_timeout_seconds if settings else None,
        max_depth=settings.max_json_depth if settings else None,
        max_file_bytes=settings.max_file_bytes if settings else None,
    )
    # Host, Origin and the cross-site rule, for everything served (the Reflex app is mounted
    # inside this one): before any route or the UI's socket sees a request.
    api.add_middleware(GuardMiddleware, settings=settings)
    # Outermost of ours but the connection cap: SSE responses stream from here, after
    # routing and the middleware above have unwound (less memory held per open stream,
    # fewer layers per frame).
    api.add_middleware(StreamsAfterRouting)
    # Outermost: counts streams. /healthz reads the same count (nearly full: degraded).
    api.state.in_flight = InFlight(settings)
    api.add_middleware(ConnectionLimitMiddleware, in_flight=api.state.in_flight)
    errors = error_responses(401, 403, 404, 409, 413, 422, 503)
    for module in (
        routes_v1,
        routes_export,
        routes_search,
        routes_recall,
        routes_memories,
        routes_agents,
        routes_runs,
        routes_imports,
        routes_files,
    ):
        api.include_router(module.router, responses=errors)
    api.include_router(routes_auth.router, responses=error_responses(401, 403, 413, 422, 429))
    api.include_router(routes_auth.checked, responses=error_responses(401, 403))
    for module in (routes_account, routes_admin):
        api.include_router(module.router, responses=errors)
    # The OpenAI-compatible gateway: errors in OpenAI's shape (401 ... 503, 400 for input).
    for module in (routes_openai, routes_responses, routes_openai_conversations):
        api.include_router(module.router, responses=error_responses(401, 403, 404, 409, 413, 503))
    api.include_router(routes_metrics.router, responses=error_responses(401, 403))
    api.include_router(routes_health.router, responses=error_responses(503))
    # The MCP server (streamable HTTP; its session manager runs in ``mcp_lifespan``).
    api.add_route(MCP_PATH, McpEndpoint(), include_in_schema=False)
    api.add_api_route(
        routes_admin.PREFIX + "/{_rest:path}",
        routes_admin.unmatched_admin,
        methods=list(ALL_METHODS),
        include_in_schema=False,
    )
    for path in ("/api/{_rest:path}", "/healthz"):  # last: only what nothing above serves
        api.add_api_route(path, unmatched, methods=list(ALL_METHODS), include_in_schema=False)
    api.add_api_route(
        "/v1/{_rest:path}", openai_unmatched, methods=list(ALL_METHODS), include_in_schema=False
    )
    return api


ALL_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
