"""Lumina's patches to the frameworks it runs on, in one place. Each module says why it
patches, what it relies on and the release series it was tested on; its ``check()``
fails start-up (:class:`UntestedPlatform`) on another series, and a canary test in
``tests/unit/test_platform_canaries.py`` breaks when the upstream behaviour changes.

- ``starlette``: an SSE response built without ``Response.__init__`` (no ``content-length: 0``);
- ``fastapi``: streaming from FastAPI's exit stack; its spent exit stacks out of the scope;
- ``granian``: the server ``reflex run`` builds gets Lumina's connection limits;
- ``socketio``: the UI socket's Origin check is Lumina's (Engine.IO, under Reflex);
- ``reflex_cors``: one CORS layer of the three Reflex adds (one ``Vary: Origin``);
- ``gc_freeze``: the heap loaded at start-up frozen out of the garbage collector's walks.

And the library internals the fast lanes read (``sqlalchemy_private``, ``aiosqlite_private``,
``tokenizers_private``): on an untested release those take their plain path instead of
failing start-up; their canaries are ``tests/unit/test_fast_lane_canaries.py``.
"""

from __future__ import annotations

from lumina_app.platform import fastapi, gc_freeze, granian, reflex_cors, socketio, starlette
from lumina_app.platform.versions import UntestedPlatform

__all__ = ["UntestedPlatform", "check"]


def check() -> None:
    """At start-up: every patched framework is of a release series its patch was tested on."""
    for patch in (starlette, fastapi, granian, socketio, reflex_cors, gc_freeze):
        patch.check()
