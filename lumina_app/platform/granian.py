"""Lumina's connection limits for granian, the server ``reflex run`` starts (docs/SECURITY.md).

Reflex 0.10 builds ``granian.server.Server`` itself (``reflex.utils.exec``) with fixed
arguments and no hook, option or environment variable for the rest, so granian's defaults
applied, and they let ~1,024 sockets take the server down:

- HTTP mode ``auto`` first reads a socket to tell HTTP/1 from HTTP/2, with no timeout: a
  socket that connects and sends nothing is held for ever (the header timeout starts only
  once that sniffing is done);
- at most ``backlog // workers`` = 1,024 connections per worker (``backpressure``); past
  that granian stops accepting, and everybody waits in the kernel's queue;
- a 30 s header timeout.

:func:`install` is called from ``rxconfig.py``, the one Lumina module the ``reflex`` CLI
imports before it builds the server. It puts a subclass of granian's ``Server`` in its place
that fills in only what the caller leaves unset: HTTP/1.1 only (h2c prior knowledge is the
only HTTP/2 a TLS-less server could speak; a proxy in front still can), the header timeout
(hyper's one timer, which also ends an idle keep-alive connection), and the connection cap
(``backpressure``), fitted under the open-file limit. Replacing a class attribute of a third
party is the least of the options: copying Reflex's launcher would drift from it, and
running granian ourselves would leave ``reflex run`` unprotected. Should Reflex start
passing any of these, its values win, and ``tests/security`` notices the limits are gone.

What it relies on: Reflex imports ``granian.server.Server`` when it builds the server (not
at its own import), and that ``Server`` takes ``http``, ``http1_settings`` and
``backpressure``. Tested on granian 2.8 under Reflex 0.10.
"""

from __future__ import annotations

import logging
import resource
from typing import Any

from lumina_app.platform.versions import require
from lumina_app.settings import Settings, get_settings

logger = logging.getLogger(__name__)
TESTED = {"granian": "2", "reflex": "0.10"}

FD_HEADROOM = 512
"""Open files a worker needs besides client sockets: database and Redis pools, logs, the
event loop, the agents' MCP subprocesses."""


def check() -> None:
    for distribution, series in TESTED.items():
        require(distribution, series, __name__)


def fd_plan(connections: int, soft: int, hard: int) -> tuple[int, int]:
    """The connection cap that fits under the open-file limit, and the soft limit to set
    for it (raised toward the hard limit when that is what it takes)."""
    need = connections + FD_HEADROOM
    if soft == resource.RLIM_INFINITY or soft >= need:
        return connections, soft
    soft = need if hard == resource.RLIM_INFINITY else min(need, hard)
    return min(connections, max(1, soft - FD_HEADROOM)), soft


def connection_cap(settings: Settings) -> int:
    """LUMINA_MAX_CONNECTIONS, or fewer when the open-file limit cannot make room for it
    (what the server was given: workers inherit the limit :func:`granian_options` set)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return fd_plan(settings.max_connections, soft, hard)[0]


def granian_options(settings: Settings) -> dict[str, Any]:
    """The keyword arguments of granian's ``Server`` that carry Lumina's limits."""
    from granian.constants import HTTPModes
    from granian.http import HTTP1Settings

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap, new_soft = fd_plan(settings.max_connections, soft, hard)
    if new_soft != soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))  # workers inherit it
    if cap < settings.max_connections:
        logger.warning(
            "LUMINA_MAX_CONNECTIONS=%d does not fit the open-file limit (%d): using %d",
            settings.max_connections,
            new_soft,
            cap,
        )
    timeout_ms = max(1, round(settings.header_read_timeout_seconds * 1000))
    return {
        "http": HTTPModes.http1,
        "http1_settings": HTTP1Settings(header_read_timeout=timeout_ms),
        "backpressure": cap,
    }


def install() -> None:
    """Make ``granian.server.Server`` apply Lumina's limits. Idempotent; settings are read
    when a server is built, not here. An untested granian or Reflex fails here, as the
    ``reflex`` CLI reads rxconfig.py."""
    check()
    import granian.server

    base = granian.server.Server
    if getattr(base, "applies_lumina_limits", False):
        return

    class LimitedServer(base):  # type: ignore[misc, valid-type]
        applies_lumina_limits = True

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{**granian_options(get_settings()), **kwargs})

    granian.server.Server = LimitedServer
