"""Waiting for a condition instead of sleeping a fixed time.

On the shared 2-core machine a fixed sleep is too short when it is loaded (the test fails
for no reason) and too long when it is not (the suite crawls). ``wait_until`` polls a
condition until it holds and returns its value, or fails naming what it waited for::

    await wait_until(lambda: run.done.is_set(), "the run to end")
    record = await wait_until(stopped_record, "the run record to say 'stopped'")
    wait_until_sync(lambda: server.port_open(), "the server to listen", within=30)

The condition may be a plain callable or (``wait_until`` only) one returning an
awaitable; any truthy value ends the wait. A condition that raises fails the wait at once
(with that exception): catch what is expected inside it.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

TIMEOUT = 15.0  # generous: a loaded machine is slow, a condition that holds ends it early
INTERVAL = 0.02


class WaitTimeout(AssertionError):
    """The condition did not hold in time (an AssertionError: the test fails, not errors)."""


def _failed(what: str, within: float, last: Any) -> WaitTimeout:
    return WaitTimeout(f"timed out after {within:g} s waiting for {what} (last seen: {last!r})")


async def wait_until(
    condition: Callable[[], T | Awaitable[T]],
    what: str,
    *,
    within: float = TIMEOUT,
    interval: float = INTERVAL,
) -> T:
    """Poll ``condition`` every ``interval`` s until it returns something truthy, and
    return that; after ``within`` s fail with ``WaitTimeout`` naming ``what``."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _failed(what, within, value)
        await asyncio.sleep(interval)


def wait_until_sync(
    condition: Callable[[], T],
    what: str,
    *,
    within: float = TIMEOUT,
    interval: float = INTERVAL,
) -> T:
    """``wait_until`` for synchronous tests (blocks the thread between polls)."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _failed(what, within, value)
        time.sleep(interval)
