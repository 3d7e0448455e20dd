"""API fixtures: the FastAPI app in-process over httpx, on services with real SQL + Redis."""

from __future__ import annotations

import httpx
import pytest

from lumina_app.api import create_api
from lumina_app.composition import install, open_services


@pytest.fixture
async def api_factory(settings_factory):
    """Build (services, client) for given setting overrides; everything closed afterwards.

    ``client_host`` sets the caller's address as the app sees it (default: loopback).
    """
    opened = []

    async def make(*, client_host: str = "127.0.0.1", **overrides):
        settings = settings_factory(**overrides)
        services = await open_services(settings)
        install(services)
        app = create_api(settings)
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=(client_host, 50123)),
            base_url="http://testserver",
            timeout=30,
        )
        opened.append((services, client))
        return services, client

    yield make
    install(None)
    for services, client in opened:
        await client.aclose()
        await services.close()


@pytest.fixture
async def api(api_factory):
    _services, client = await api_factory()
    return client
