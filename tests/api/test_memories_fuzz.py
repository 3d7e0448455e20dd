"""The memory routes under schemathesis (issue #27): whatever a client sends them, never a
5xx — the whole-API run (test_schemathesis.py) covers them too, this one in minutes."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error

from tests.api.test_schemathesis import _nodeid_for_schemathesis, app  # noqa: F401 (fixtures)


@pytest.fixture
def memory_schema(app) -> schemathesis.BaseSchema:  # noqa: F811
    return schemathesis.openapi.from_asgi("/openapi.json", app)


schema = schemathesis.pytest.from_fixture("memory_schema")


@pytest.mark.slow
@schema.include(path_regex="/api/v1/memories").parametrize()
@settings(
    max_examples=40,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_memory_request_gets_a_server_error(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=[not_a_server_error], timeout=10)
    if case.path_parameters:
        # one that may exist (a generated POST made it)
        case.path_parameters = dict.fromkeys(case.path_parameters, "1")
        case.call_and_validate(checks=[not_a_server_error], timeout=10)
