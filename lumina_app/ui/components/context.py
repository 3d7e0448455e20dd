"""The dialog that shows an answer's context: every message its model was given."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components import said
from lumina_app.ui.components.memories import used_memories
from lumina_app.ui.state.context import ContextState

ROLE_COLORS = {"system": "gray", "user": "blue", "assistant": "violet", "tool": "amber"}


def context_button(run_id) -> rx.Component:
    return rx.cond(
        run_id != "",
        rx.button(
            rx.icon("layers", size=12),
            "Context",
            size="1",
            variant="ghost",
            color_scheme="gray",
            on_click=ContextState.show(run_id),
            custom_attrs={"data-testid": "show-context"},
        ),
    )


def _message(message: dict) -> rx.Component:
    return rx.box(
        rx.cond(
            message["call"] != "",
            rx.text(
                message["call"],
                size="1",
                color="var(--gray-11)",
                weight="medium",
                custom_attrs={"data-testid": "context-call"},
            ),
        ),
        rx.badge(
            message["role"],
            color_scheme=rx.match(message["role"], *ROLE_COLORS.items(), "gray"),
            variant="soft",
            size="1",
        ),
        rx.text(message["content"], size="2", white_space="pre-wrap", overflow_wrap="anywhere"),
        padding="0.5em 0",
        border_bottom="1px solid var(--gray-a4)",
        custom_attrs={"data-testid": "context-message"},
    )


def context_dialog() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title("What the model was given"),
            said(ContextState.error, "info", "amber"),
            rx.flex(
                rx.foreach(ContextState.facts, lambda f: rx.badge(f, variant="outline")),
                rx.cond(
                    ContextState.summary != "",
                    rx.badge(ContextState.summary, color_scheme="violet", variant="soft"),
                ),
                wrap="wrap",
                gap="2",
                padding_bottom="0.5em",
            ),
            used_memories(ContextState.memories),
            rx.cond(
                ContextState.loading,
                rx.spinner(),
                rx.box(
                    rx.foreach(ContextState.messages, _message),
                    max_height="60vh",
                    overflow_y="auto",
                ),
            ),
            rx.dialog.close(rx.button("Close", variant="soft", margin_top="1em")),
            max_width="48em",
            custom_attrs={"data-testid": "context-dialog"},
        ),
        open=ContextState.open,
        on_open_change=ContextState.set_open,
    )
