"""A small circuit breaker: after a failure, skip the dependency for a cool-down, then probe."""

from __future__ import annotations

import time
from collections.abc import Callable


class CircuitBreaker:
    """Closed → open on failure → after ``cooldown`` one probe is let through (half-open)."""

    def __init__(self, cooldown: float, clock=time.monotonic) -> None:
        self.cooldown = cooldown
        self._clock = clock
        self._opened_at: float | None = None
        self._probe_started: float | None = None
        # Told True when the breaker opens and False when it closes again (metrics).
        self.listeners: list[Callable[[bool], None]] = []

    @property
    def is_open(self) -> bool:
        return self._opened_at is not None

    def allow(self) -> bool:
        """May a call go through now? In half-open state only one probe at a time."""
        if self._opened_at is None:
            return True
        now = self._clock()
        if now - self._opened_at < self.cooldown:
            return False
        # A probe that never reported (its caller was cancelled) expires after a cool-down.
        if self._probe_started is not None and now - self._probe_started < self.cooldown:
            return False
        self._probe_started = now
        return True

    def record_success(self) -> None:
        was_open = self._opened_at is not None
        self._opened_at = None
        self._probe_started = None
        if was_open:
            self._tell(False)

    def record_failure(self) -> None:
        opened = self._opened_at is None
        self._opened_at = self._clock()
        self._probe_started = None
        if opened:
            self._tell(True)

    def _tell(self, is_open: bool) -> None:
        for listener in self.listeners:
            listener(is_open)
