"""The granian server ``reflex run`` builds gets Lumina's limits (``lumina_app.platform.granian``);
``test_floods`` shows them at work on a real server. Building a server binds nothing."""

from __future__ import annotations

import resource
from collections.abc import Iterator

import granian.server
import pytest
from granian.constants import HTTPModes, Interfaces

from lumina_app.platform import granian as granian_limits
from lumina_app.platform.granian import FD_HEADROOM, fd_plan
from lumina_app.settings import load_settings

INFINITY = resource.RLIM_INFINITY


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[type]:
    """``install()`` with given settings; granian's own class back afterwards."""
    monkeypatch.setattr(granian.server, "Server", granian.server.Server)
    monkeypatch.setattr(
        granian_limits,
        "get_settings",
        lambda: load_settings(header_read_timeout_seconds=2.5, max_connections=300),
    )
    granian_limits.install()
    yield granian.server.Server


def build(server_class: type, **kwargs: object) -> granian.server.Server:
    """As Reflex's run_granian_backend_prod does (it passes no limit of its own)."""
    return server_class(
        target="lumina_app.lumina_app:app", factory=True, interface=Interfaces.ASGI, **kwargs
    )


def test_the_server_reflex_builds_gets_the_limits(installed: type) -> None:
    server = build(installed, workers=1)
    assert server.http is HTTPModes.http1  # no HTTP/2 sniffing, which has no timeout
    assert server.http1_settings.header_read_timeout == 2500
    assert server.backpressure == 300


def test_what_the_caller_passes_wins(installed: type) -> None:
    server = build(installed, backpressure=7, http=HTTPModes.auto)
    assert (server.backpressure, server.http) == (7, HTTPModes.auto)
    assert server.http1_settings.header_read_timeout == 2500


def test_install_is_idempotent(installed: type) -> None:
    granian_limits.install()
    assert granian.server.Server is installed


@pytest.mark.parametrize(
    ("soft", "hard", "plan"),
    [
        (20_000, 20_000, (4096, 20_000)),  # fits
        (INFINITY, INFINITY, (4096, INFINITY)),
        (1024, 524_288, (4096, 4096 + FD_HEADROOM)),  # raised toward the hard limit
        (1024, INFINITY, (4096, 4096 + FD_HEADROOM)),
        (1024, 2048, (2048 - FD_HEADROOM, 2048)),  # cannot: the cap shrinks to fit
    ],
)
def test_the_cap_fits_the_open_file_limit(soft: int, hard: int, plan: tuple[int, int]) -> None:
    assert fd_plan(4096, soft, hard) == plan
