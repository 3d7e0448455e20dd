"""A real Lumina server per backend for the client package's tests (``lumina_client`` is
installed from clients/python by requirements-dev.txt), shared by this folder's modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import BACKENDS
from tests.keyed_server import keyed_server
from tests.server import AppServer


@pytest.fixture(scope="package", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, _databases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    workdir = tmp_path_factory.mktemp(f"client-{request.param}")
    with keyed_server(_databases(request.param), workdir) as up:
        yield up
