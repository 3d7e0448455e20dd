"""Canaries of the framework patches in lumina_app/platform/: each exercises the upstream
behaviour its patch relies on, so an upgrade that changes it fails here, by name, rather
than as a stream that ends early or a socket that lets any Origin in. And the version
guards: an untested release series fails start-up."""

from __future__ import annotations

import gc
import importlib.metadata
import inspect
from typing import Any

import engineio
import granian.server
import httpx
import pytest
import reflex.app
import reflex.utils.exec
from fastapi import FastAPI
from granian.constants import HTTPModes
from granian.http import HTTP1Settings
from starlette.responses import Response

from lumina_app import platform
from lumina_app.api.sse import _RAW_HEADERS, SSE_HEADERS, EventStream
from lumina_app.platform import fastapi as fastapi_patch
from lumina_app.platform import gc_freeze, socketio, starlette
from lumina_app.platform.versions import UntestedPlatform, require, series

pytestmark = pytest.mark.unit


# -- starlette: an SSE response without Response.__init__ ---------------------------------


def test_response_init_sets_only_what_bare_init_sets_and_the_body() -> None:
    """If ``__init__`` starts setting something else, an EventStream would lack it."""
    assert set(vars(Response())) == {"status_code", "background", "body", "raw_headers"}
    stream = EventStream(_no_events(), lambda e: None, keepalive=15, send_timeout=5)
    assert {"status_code", "background", "raw_headers"} <= set(vars(stream))
    assert "body" not in vars(stream)


def test_response_init_would_send_a_content_length_of_zero() -> None:
    """The reason for the patch: an empty body gets ``content-length: 0`` (granian then
    ends the response before the first frame), the rest as the patch renders it."""
    raw = Response(headers=SSE_HEADERS, media_type="text/event-stream").raw_headers
    assert (b"content-length", b"0") in raw
    assert [h for h in raw if h[0] != b"content-length"] == _RAW_HEADERS
    assert starlette.raw_headers({"X-A": "b"}, "text/plain") == [
        (b"x-a", b"b"),
        (b"content-type", b"text/plain"),
    ]


# -- fastapi: its exit stacks in the scope --------------------------------------------------


async def test_fastapi_puts_its_exit_stacks_in_the_scope_and_closes_them_after_the_route() -> None:
    seen: dict[str, Any] = {"order": []}

    class Probe(Response):
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            seen["keys"] = set(scope)

            async def on_exit(*_: object) -> bool:
                seen["order"].append("exit stack closed")
                return False

            seen["deferred"] = fastapi_patch.defer_to_exit_stack(scope, on_exit)
            await super().__call__(scope, receive, send)
            seen["order"].append("response sent")

    app = FastAPI()

    @app.get("/probe")
    async def probe() -> Response:
        return Probe(b"ok")

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        assert (await client.get("/probe")).text == "ok"
    assert set(fastapi_patch.SPENT) <= seen["keys"]
    assert seen["deferred"] is True
    assert seen["order"] == ["response sent", "exit stack closed"]
    scope = dict.fromkeys(fastapi_patch.SPENT) | {"type": "http"}
    fastapi_patch.drop_spent_stacks(scope)
    assert scope == {"type": "http"}
    assert fastapi_patch.defer_to_exit_stack({"type": "http"}, probe) is False


# -- granian: the Server Reflex builds ----------------------------------------------------


def test_reflex_builds_granian_server_from_the_module_attribute_at_run_time() -> None:
    """Replacing ``granian.server.Server`` works only while Reflex imports it when it
    builds the server, with no limit of its own."""
    source = inspect.getsource(reflex.utils.exec.run_granian_backend_prod)
    assert "from granian.server import Server" in source
    for kwarg in ("backpressure=", "http1_settings=", "http="):
        assert kwarg not in source


def test_granian_server_takes_the_limits() -> None:
    params = inspect.signature(granian.server.Server.__init__).parameters
    assert {"http", "http1_settings", "backpressure"} <= set(params)
    assert isinstance(granian.server.Server, type)
    assert HTTPModes.http1.value == "1"
    assert HTTP1Settings(header_read_timeout=1500).header_read_timeout == 1500


# -- socketio: the UI socket's Origin rule ----------------------------------------------------


def test_reflex_app_has_a_socketio_server_with_an_engineio_one() -> None:
    assert "sio" in inspect.get_annotations(reflex.app.App)
    import socketio as python_socketio

    server = python_socketio.AsyncServer(async_mode="asgi", cors_allowed_origins=[])
    assert isinstance(server.eio, engineio.AsyncServer)


async def test_engineio_asks_a_callable_at_the_handshake() -> None:
    """Set after the server is built, as Reflex builds it: refused Origin → 400."""
    asked = []

    def allowed(origin: str | None, environ: dict) -> bool:
        asked.append((origin, environ.get("HTTP_HOST")))
        return origin == "http://good.test"

    server = engineio.AsyncServer(async_mode="asgi", cors_allowed_origins=["http://x"])
    app = type("App", (), {"sio": type("Sio", (), {"eio": server})()})()
    socketio.check_origins(app, allowed)
    transport = httpx.ASGITransport(app=engineio.ASGIApp(server))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        path = "/engine.io/?EIO=4&transport=polling"
        bad = await client.get(path, headers={"Origin": "http://evil.test"})
        good = await client.get(path, headers={"Origin": "http://good.test"})
    assert bad.status_code == 400
    assert good.status_code == 200
    assert good.headers["access-control-allow-origin"] == "http://good.test"
    assert ("http://evil.test", "t") in asked


# -- gc_freeze ------------------------------------------------------------------------------


def test_gc_freeze_moves_the_heap_out_of_collections() -> None:
    try:
        gc_freeze.freeze()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


# -- reflex_cors: one CORS layer of Reflex's three ------------------------------------------


def test_reflex_adds_its_cors_layer_as_user_middleware_and_mount_inside_takes_it_out() -> None:
    """What the patch relies on: Reflex's layer is a ``user_middleware`` entry of the app it
    hands a transformer (read at its first request); the transformer mounts it, CORS-free."""
    from starlette.applications import Starlette
    from starlette.middleware.cors import CORSMiddleware

    from lumina_app.platform import reflex_cors

    inner, outer = Starlette(), Starlette()
    reflex.app.App._add_cors(inner)
    assert [m.cls for m in inner.user_middleware] == [CORSMiddleware]
    assert reflex_cors.mount_inside(outer)(inner) is outer
    assert inner.user_middleware == [] and outer.user_middleware == []
    assert [route.app for route in outer.routes] == [inner]  # mounted at the root


# -- the guards -----------------------------------------------------------------------------


def test_every_patch_is_of_a_tested_series() -> None:
    platform.check()  # what the lifespan runs at start-up


@pytest.mark.parametrize(
    ("version", "expected"),
    [("2.8.9", (2,)), ("0.10.1", (0, 10)), ("1.10.0", (1,)), ("0.165.0", (0, 165)), ("3", (3,))],
)
def test_a_release_series_is_the_major_or_a_0x_minor(version: str, expected: tuple) -> None:
    assert series(version) == expected


@pytest.mark.parametrize("untested", ["3.0.0", "0.11.0"])
def test_an_untested_series_fails_loudly(monkeypatch: pytest.MonkeyPatch, untested: str) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda _name: untested)
    with pytest.raises(UntestedPlatform, match="granian"):
        require("granian", "2" if untested.startswith("3") else "0.10", "lumina_app.platform.x")
    with pytest.raises(UntestedPlatform):
        platform.check()


async def _no_events():
    return
    yield
