"""One ``Vary: Origin`` per response, from outside over HTTP (``reflex run --backend-only``):
Reflex adds a CORS layer to three of its apps and each appended ``Origin`` (``Vary: Origin,
Origin`` on the API, three times on ``/ping``) until lumina_app/platform/reflex_cors.py left
one. CORS itself still applies: an allowed Origin is echoed, a foreign one's preflight is
refused."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.faults.realserver import start_server
from tests.server import AppServer

ALLOWED = "http://other.example"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    started = start_server(tmp_path_factory.mktemp("vary"), LUMINA_ALLOWED_ORIGINS=ALLOWED)
    yield started
    started.stop()


def _vary(response: httpx.Response) -> list[str]:
    """Every name the response's Vary headers list, repeats kept."""
    return [n.strip() for v in response.headers.get_list("vary") for n in v.split(",")]


@pytest.mark.slow
@pytest.mark.parametrize("origin", [None, ALLOWED, "http://evil.example"])
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/v1/conversations", {"agentId": "assistant"}),
        ("GET", "/api/v1/conversations", None),
        ("GET", "/healthz", None),
        ("GET", "/ping", None),  # Reflex's own API app
        ("GET", "/api/v1/nowhere", None),  # the API's 404
    ],
)
def test_a_response_varies_on_origin_once(
    server: AppServer, method: str, path: str, body: dict | None, origin: str | None
) -> None:
    headers = {"Origin": origin} if origin else {}
    response = httpx.request(method, server.url + path, json=body, headers=headers, timeout=10)
    assert response.status_code < 500, response.text
    assert _vary(response) == ["Origin"], response.headers
    if origin == ALLOWED:
        assert response.headers["access-control-allow-origin"] == ALLOWED
    else:
        assert "access-control-allow-origin" not in response.headers


@pytest.mark.slow
@pytest.mark.parametrize(("origin", "status"), [(ALLOWED, 200), ("http://evil.example", 400)])
def test_a_preflight_varies_on_origin_once_and_still_checks_the_origin(
    server: AppServer, origin: str, status: int
) -> None:
    response = httpx.options(
        server.url + "/api/v1/conversations",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
        timeout=10,
    )
    assert response.status_code == status
    names = _vary(response)
    assert names.count("Origin") == 1 and len(names) == len(set(names)), names
    assert (response.headers.get("access-control-allow-origin") == origin) == (status == 200)
