"""Property-based requests against the account routes in users mode, sent with an admin's
own API key (so every route reaches past the admin check): whatever a client sends — NUL
in a username, ids past 32 bits, bodies of the wrong shape — no answer is a 5xx."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi

from lumina_app.composition import open_services
from lumina_app.domain import OPERATOR, Role
from tests.api.test_schemathesis import (  # noqa: F401 - the autouse fixture applies here too
    WithServices,
    _nodeid_for_schemathesis,
)

ACCOUNT_ROUTES = r"^/api/v1/(auth/|me$|keys|account/|admin/)"


def admin_key(settings) -> str:
    """An admin account and its key, made on the database before the app opens it."""

    async def make() -> str:
        services = await open_services(settings, recover=False)
        try:
            await services.users.create(OPERATOR, "root", role=Role.ADMIN, password="x" * 16)
            key, _info = await services.users.issue_key(OPERATOR, "root", "fuzzer")
            return key
        finally:
            await services.close()

    return asyncio.run(make())


@pytest.fixture(params=["sqlite", "postgresql"])
def app(request: pytest.FixtureRequest, settings_factory, _databases) -> Iterator[WithServices]:
    database = _databases(request.param)
    database.truncate()
    settings = settings_factory(database_url=database.url, max_body_bytes=4096)
    app = WithServices(settings)
    app.key = admin_key(settings)
    yield app
    asgi.shutdown_lifespans()


@pytest.fixture
def api_schema(app: WithServices) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_asgi("/openapi.json", app)


# Revoking keys by generated id could revoke the fuzzer's own (id 1): left out here, tested
# in test_accounts_api.py.
schema = (
    schemathesis.pytest.from_fixture("api_schema")
    .include(path_regex=ACCOUNT_ROUTES)
    .exclude(method="DELETE", path="/api/v1/keys/{key_id}")
)


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_input_to_the_account_routes_gets_a_server_error(
    case: schemathesis.Case, app: WithServices
) -> None:
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {app.key}"}
    case.call_and_validate(checks=[not_a_server_error], timeout=30)
