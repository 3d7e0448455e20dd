"""A tick every few seconds from an open page, so the access gate re-checks its socket even
while nobody types: a disabled account, a revoked session or a switch to users mode sends
the page to sign in within one tick (the gate clears its state first)."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.state.base import AppState

TICK_MS = 5000


def heartbeat() -> rx.Component:
    # Moment re-renders every interval; the text (unix seconds) changes, so on_change fires.
    return rx.box(
        rx.moment(interval=TICK_MS, format="X", on_change=AppState.heartbeat),
        display="none",
    )
