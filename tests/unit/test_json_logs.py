"""LUMINA_LOG_FORMAT=json: one JSON object per line, naming the run and conversation a line
is about, also in the tasks a run starts."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest

from lumina_app.domain import log_context
from lumina_app.observability.logs import JsonFormatter, configure
from lumina_app.settings import SettingsError, load_settings

pytestmark = pytest.mark.unit


def test_a_line_is_one_object_with_the_run_ids() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("lumina_app.test_json")
    logger.addHandler(handler)
    logger.propagate = False

    async def run() -> None:
        log_context.bind(run="run-0123456789abcdef", conversation="c-1")

        async def inside() -> None:
            logger.warning("inside the run's task: %s", "multi\nline")

        await asyncio.create_task(inside())

    try:
        logger.warning("before any run")
        asyncio.run(run())
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3
    first, second, third = (json.loads(line) for line in lines)
    assert "run_id" not in first and first["message"] == "before any run"
    assert second["run_id"] == "run-0123456789abcdef" and second["conversation_id"] == "c-1"
    assert second["message"] == "inside the run's task: multi\nline"
    assert second["level"] == "WARNING" and second["logger"] == "lumina_app.test_json"
    assert "ValueError: boom" in third["exception"]


def test_the_setting_picks_the_format() -> None:
    assert load_settings(log_format="json").log_format == "json"
    with pytest.raises(SettingsError, match=r"LOG_FORMAT"):
        load_settings(log_format="xml")
    root = logging.getLogger()
    before = [h.formatter for h in root.handlers]
    configure("text")
    assert [h.formatter for h in root.handlers] == before
