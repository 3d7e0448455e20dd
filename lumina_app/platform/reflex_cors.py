"""One CORS layer instead of three, so a response says ``Vary: Origin`` once.

Reflex adds Starlette's ``CORSMiddleware`` to its own API app (``/ping``, ``/_event``,
``/_upload``), to an ``api_transformer`` given as an app, and to the app it puts on top of
both; each layer appends ``Origin`` to ``Vary`` (``Vary: Origin, Origin`` on the API,
three times on ``/ping``). Lumina gives Reflex :func:`mount_inside` as a transformer
function instead (Reflex adds CORS to an app, not to a function): it mounts Reflex's API
app inside Lumina's with the CORS layer taken out, so only the top one is left, which
answered the preflights before Lumina's guard saw them and still does. What it relies on:
the app handed to a transformer is Reflex's API app, whose middleware stack is built at
its first request from ``user_middleware``. Tested on Reflex 0.10, Starlette 1.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware

from lumina_app.platform.versions import require

TESTED = {"reflex": "0.10", "starlette": "1"}


def check() -> None:
    for distribution, series in TESTED.items():
        require(distribution, series, __name__)


def mount_inside(outer: Starlette) -> Callable[[Starlette], Starlette]:
    """The ``api_transformer`` that mounts Reflex's API app at the root of ``outer`` (as
    Reflex does with an app) without a CORS layer in either."""
    check()

    def transform(reflex_api: Starlette) -> Starlette:
        reflex_api.user_middleware = [
            m for m in reflex_api.user_middleware if m.cls is not CORSMiddleware
        ]
        outer.mount("", reflex_api)
        return outer

    return transform
