"""Agent-runtime fixtures live in tests/conftest.py (shared with the API tests)."""
