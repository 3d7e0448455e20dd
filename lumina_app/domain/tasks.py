"""Background tasks held until they end (the event loop keeps only a weak reference)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


def keep(
    tasks: set[asyncio.Task], work: Coroutine[Any, Any, Any], name: str | None = None
) -> asyncio.Task:
    """``work`` as a task held in ``tasks`` until it is done."""
    task = asyncio.create_task(work, name=name)
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    return task
