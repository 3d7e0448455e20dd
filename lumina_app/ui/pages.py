"""Pages of the browser UI."""

import reflex as rx


def index() -> rx.Component:
    """Landing page."""
    return rx.container(
        rx.heading("Lumina", size="8"),
        rx.text("Conversations and memory for LLM agents."),
        padding_y="2em",
    )
