"""Agent-runtime fixtures live in tests/conftest.py (shared with the API tests); the
in-process API fixtures come from tests/api."""

from tests.api.conftest import api, api_factory  # noqa: F401 - fixtures
