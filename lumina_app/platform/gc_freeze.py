"""The heap loaded at start-up, frozen out of the garbage collector's walks.

Everything loaded by the time the services are open (Reflex, the app, its modules) lives
for the whole process. Frozen (``gc.freeze``: moved to CPython's permanent generation), a
full collection no longer walks it: measured on this app, that took each gen-2 collection
from 45-100 ms (a stall of every open stream) down to the objects made since
(docs/PERFORMANCE.md). CPython only; tested on CPython 3.11.
"""

from __future__ import annotations

import gc
import sys

from lumina_app.platform.versions import UntestedPlatform

TESTED = (3,)


def check() -> None:
    if sys.implementation.name != "cpython" or sys.version_info[:1] != TESTED:
        raise UntestedPlatform(
            f"{__name__} was tested on CPython 3.x, not {sys.implementation.name} "
            f"{sys.version.split()[0]}: check gc.freeze still holds, then update its TESTED"
        )


def freeze() -> None:
    """Freeze what the process has loaded so far (at the end of start-up)."""
    check()
    gc.freeze()
