"""The UI socket's Origin check is Lumina's (docs/SECURITY.md).

Reflex builds its Socket.IO server with Engine.IO's ``cors_allowed_origins`` taken from
rxconfig (a list, or ``"*"``), with no way to pass a rule. Engine.IO also takes a callable
there, read at each handshake and called with ``(origin, environ)``, so
:func:`check_origins` sets it on the server Reflex built (``app.sio.eio``). What it relies
on: ``App.sio`` is a python-socketio ``AsyncServer`` whose ``eio`` is the Engine.IO server,
and a callable's False refuses the handshake (400). Tested on Reflex 0.10,
python-socketio 5.18, python-engineio 4.15.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lumina_app.platform.versions import require

TESTED = {"reflex": "0.10", "python-socketio": "5", "python-engineio": "4"}


def check() -> None:
    for distribution, series in TESTED.items():
        require(distribution, series, __name__)


def check_origins(app: Any, allowed: Callable[[str | None, dict], bool]) -> None:
    """Engine.IO asks ``allowed(origin, environ)`` at each handshake of ``app``'s socket."""
    check()
    app.sio.eio.cors_allowed_origins = allowed
