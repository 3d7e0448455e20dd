"""The "Used N memories" mark under an answer, opening which ones (each linked to its
entry on the Memory page)."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.routes import MEMORIES
from lumina_app.ui.state.used_memories import UsedMemoriesState
from lumina_app.ui.view_models.views import MessageView


def _item(item: dict) -> rx.Component:
    return rx.hstack(
        rx.icon("dot", size=14, color="var(--violet-11)"),
        rx.link(
            item["text"],
            href=item["href"],
            size="2",
            custom_attrs={"data-testid": "used-memory-link"},
        ),
        rx.cond(
            item["status"] != "active",
            rx.badge(item["status"], size="1", color_scheme="gray", variant="soft"),
        ),
        spacing="1",
        align="start",
        custom_attrs={"data-testid": "used-memory"},
    )


def used_mark(msg: MessageView) -> rx.Component:
    """Shown on an answer whose run was given long-term memories."""
    return rx.cond(
        (msg["memories"] > 0) & (msg["run"] != ""),
        rx.popover.root(
            rx.popover.trigger(
                rx.button(
                    rx.icon("brain", size=12),
                    rx.text(
                        "Used ",
                        msg["memories"],
                        rx.cond(msg["memories"] == 1, " memory", " memories"),
                    ),
                    variant="ghost",
                    color_scheme="violet",
                    size="1",
                    on_click=UsedMemoriesState.show(msg["run"]),
                    custom_attrs={"data-testid": "used-memories-mark"},
                ),
            ),
            rx.popover.content(
                rx.vstack(
                    rx.text("What this answer knew about you", size="2", weight="medium"),
                    rx.cond(
                        UsedMemoriesState.loading,
                        rx.spinner(size="1"),
                        rx.foreach(UsedMemoriesState.items, _item),
                    ),
                    rx.cond(
                        UsedMemoriesState.error != "",
                        rx.text(UsedMemoriesState.error, size="1", color="gray"),
                    ),
                    rx.link("Correct them on the Memory page", href=MEMORIES, size="1"),
                    spacing="2",
                    max_width="26em",
                ),
                custom_attrs={"data-testid": "used-memories-list"},
            ),
        ),
    )
