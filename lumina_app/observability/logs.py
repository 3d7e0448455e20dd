"""``LUMINA_LOG_FORMAT=json``: every log line one JSON object (time, level, logger, message,
and the run and conversation it is about, from ``domain/log_context.py``), for a log
pipeline to index without parsing prose."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from lumina_app.domain import log_context


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        run, conversation = log_context.run_id.get(), log_context.conversation_uuid.get()
        if run:
            line["run_id"] = run
        if conversation:
            line["conversation_id"] = conversation
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure(log_format: str) -> None:
    """Give the root logger's handlers the JSON format (one to stderr if it has none).
    ``text`` leaves logging as the server set it up."""
    if log_format != "json":
        return
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler())
        root.setLevel(logging.INFO)
    for handler in root.handlers:
        handler.setFormatter(JsonFormatter())
