"""FastAPI's per-request exit stacks, which it keeps in the ASGI scope.

FastAPI puts ``AsyncExitStack``s in the scope: ``fastapi_middleware_astack``, closed by its
innermost middleware once the route has returned (there for uploaded files), and
``fastapi_inner_astack`` / ``fastapi_function_astack`` (dependencies with ``yield``). An SSE
response that cannot stream from Lumina's own ``StreamsAfterRouting`` streams from the
first one's exit (:func:`defer_to_exit_stack`), so the route's frames are not kept for as
long as the stream is open; once streaming, all three are spent and are dropped from the
scope (:func:`drop_spent_stacks`), which would keep them alive meanwhile (measured under
granian: ~5 KB per idle stream). Private names: tested on FastAPI 0.165.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.types import Scope

from lumina_app.platform.versions import require

TESTED = "0.165"
MIDDLEWARE_STACK = "fastapi_middleware_astack"
SPENT = (MIDDLEWARE_STACK, "fastapi_inner_astack", "fastapi_function_astack")


def check() -> None:
    require("fastapi", TESTED, __name__)


def defer_to_exit_stack(scope: Scope, callback: Callable[..., Awaitable[Any]]) -> bool:
    """Have ``callback`` run as an exit callback when FastAPI closes the request's middleware
    exit stack, after the route has returned; False when the scope has none."""
    if MIDDLEWARE_STACK not in scope:
        return False
    scope[MIDDLEWARE_STACK].push_async_exit(callback)
    return True


def drop_spent_stacks(scope: Scope) -> None:
    """Drop the exit stacks FastAPI has closed by the time a response streams."""
    for key in SPENT:
        scope.pop(key, None)
