"""Robustness tests reuse the API fixtures (in-process app over real SQL + Redis)."""

from tests.api.conftest import api, api_factory  # noqa: F401 - fixtures
