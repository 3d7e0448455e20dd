"""The connection in Lumina's own words, in place of Reflex's raw "Cannot connect to
server: websocket error …" toast (the app's overlay wrap): a slim banner at the top,
never over the composer, "Reconnecting…" while the socket is down, "Back" once it
returns (shown by ``assets/lumina-composer.js``, which also refreshes the open
conversation); and the small "Copied" note."""

from __future__ import annotations

import reflex as rx
from reflex.components.core.banner import has_connection_errors

OVERLAY_WRAP = (5, "Overlay")  # the key of Reflex's default overlay in App.app_wraps


def _pill(
    icon: str, text: str, testid: str, color: str, *, offline: bool = False, **props
) -> rx.Component:
    return rx.hstack(
        rx.icon(icon, size=14),
        rx.text(text, size="1", weight="medium"),
        align="center",
        spacing="2",
        position="fixed",
        top="0.6em",
        left="50%",
        transform="translateX(-50%)",
        z_index="1000",
        padding="0.3em 0.9em",
        border_radius="var(--radius-6)",
        background=f"var(--{color}-3)",
        color=f"var(--{color}-11)",
        border=f"1px solid var(--{color}-6)",
        box_shadow="var(--shadow-3)",
        white_space="nowrap",
        role="status",
        custom_attrs={"data-testid": testid, **({"data-lumina-offline": "1"} if offline else {})},
        **props,
    )


def connection_overlay() -> rx.Component:
    return rx.fragment(
        rx.cond(
            has_connection_errors,
            _pill(
                "wifi-off",
                "Reconnecting… what you type is kept",
                "connection-banner",
                "amber",
                offline=True,
            ),
        ),
        _pill("wifi", "Back", "connection-back", "green", class_name="lumina-hidden"),
        _pill("check", "Copied", "copied-note", "gray", class_name="lumina-hidden"),
    )


def install_overlay(app: rx.App) -> None:
    """Replace Reflex's connection toaster and pulser with the banner above."""
    app.app_wraps[OVERLAY_WRAP] = lambda stateful: connection_overlay() if stateful else None
