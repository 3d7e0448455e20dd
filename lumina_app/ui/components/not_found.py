"""Lumina's own 404 page: what happened, and the way back to the chat."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.routes import HOME


def not_found_page() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.icon("compass", size=40, color="var(--accent-9)"),
            rx.heading("There is no page here", size="6"),
            rx.text(
                "The address may be mistyped, or what it pointed to has moved.",
                color="gray",
                text_align="center",
            ),
            rx.link(
                rx.button(rx.icon("arrow-left", size=16), "Back to your conversations"),
                href=HOME,
                underline="none",
                custom_attrs={"data-testid": "back-home"},
            ),
            align="center",
            spacing="4",
            custom_attrs={"data-testid": "not-found-page"},
        ),
        min_height="100dvh",
        padding="2em",
    )
