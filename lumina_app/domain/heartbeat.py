"""The keepalive clock of an open SSE stream, shared with the run event subscription it
reads: the subscription yields ``None`` when a keepalive is due, so the sender waits on the
subscription alone (no timer task, no queue, no timeout object per wait)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import ContextVar


class Heartbeat:
    """Due ``every`` seconds after the last thing sent. One timer per stream, moved at most
    once a keepalive period (not per frame): when it finds the stream due it calls ``wake``
    (the subscription's "something changed"), whose waiter then sees :meth:`due`."""

    __slots__ = ("_at", "_loop", "_timer", "every", "wake")

    def __init__(self, every: float) -> None:
        self.every = every
        self.wake: Callable[[], object] | None = None
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._at = 0.0

    @property
    def deadline(self) -> float:
        """Loop time at which the next keepalive is due."""
        return self._at

    def due(self) -> bool:
        return self._loop.time() >= self._at

    def reset(self) -> None:
        """Something was just sent: the next keepalive is due ``every`` seconds from now."""
        self._at = self._loop.time() + self.every
        self._arm(self._at)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.wake = None

    def _arm(self, at: float) -> None:
        """Have the timer run :meth:`_check` by ``at`` (an earlier one is left alone)."""
        if self._timer is not None:
            if self._timer.when() <= at:
                return
            self._timer.cancel()
        self._timer = self._loop.call_at(at, self._check)

    def _check(self) -> None:
        self._timer = None
        if not self.due():
            self._arm(self._at)  # sent something since: look again when that comes due
        elif self.wake is not None:
            self.wake()  # the keepalive, once sent, resets (and so re-arms) the clock


# Context, not a parameter: the sender sets it in its own task, and every layer between
# it and the log (the engine's follow) passes ``None`` on untouched.
HEARTBEAT: ContextVar[Heartbeat | None] = ContextVar("lumina_sse_heartbeat", default=None)
