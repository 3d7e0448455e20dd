"""Swagger UI at /docs and ReDoc at /redoc from files the app ships: FastAPI's own pages load
their scripts from a CDN, so a browser without internet got a blank page."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_URL = "/docs"
REDOC_URL = "/redoc"
ASSETS_URL = "/docs-assets"
# fastapi-offline's copy of swagger-ui-dist 5 and redoc 2 (its layout; pinned in requirements).
ASSETS_DIR = Path(fastapi_offline.__file__).parent / "static"
REDOC_POLICY = "img-src 'self' data:"


def install_docs(api: FastAPI) -> None:
    """Add the two docs pages and their assets to an app built with ``docs_url=None`` and
    ``redoc_url=None``; open to every caller, like FastAPI's own pages."""
    openapi_url = api.openapi_url
    redirect_url = api.swagger_ui_oauth2_redirect_url
    if not (openapi_url and redirect_url):
        raise ValueError("the docs pages need the app's openapi_url and oauth2 redirect url")
    api.mount(ASSETS_URL, StaticFiles(directory=ASSETS_DIR), name="docs-assets")

    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=root + openapi_url,
            title=f"{api.title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
            oauth2_redirect_url=root + redirect_url,
            init_oauth=api.swagger_ui_init_oauth,
            swagger_ui_parameters=api.swagger_ui_parameters,
        )

    async def swagger_ui_redirect(_request: Request) -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        page = get_redoc_html(
            openapi_url=root + openapi_url,
            title=f"{api.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
            with_google_fonts=False,
        )
        # ReDoc's script always asks cdn.redoc.ly for its footer logo: keep it from trying.
        page.headers["Content-Security-Policy"] = REDOC_POLICY
        return page

    api.add_route(DOCS_URL, swagger_ui, include_in_schema=False)
    api.add_route(redirect_url, swagger_ui_redirect, include_in_schema=False)
    api.add_route(REDOC_URL, redoc, include_in_schema=False)
