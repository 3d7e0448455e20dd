"""A question edited in place: its bubble becomes a text box with "Save & send" and
"Cancel" (Enter sends, Shift+Enter a new line, Esc cancels: ``assets/lumina-edit.js``).
Sent, it is a new branch of the conversation from that question."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components import cancel_button, testid
from lumina_app.ui.state.actions import MessageActions

EDIT_SCRIPT = "/lumina-edit.js"


def edit_box() -> rx.Component:
    return rx.form(
        rx.vstack(
            rx.text_area(
                id="lumina-edit-text",
                name="message",
                default_value=MessageActions.edit_text,
                auto_height=True,
                auto_focus=True,
                min_height="3em",
                max_height="min(40dvh, 18em)",
                overflow_y="auto",
                width="100%",
                size="2",
                custom_attrs={"data-testid": "edit-text"},
            ),
            rx.cond(
                MessageActions.failed != "",
                rx.callout(MessageActions.failed, color_scheme="red", size="1"),
            ),
            rx.hstack(
                rx.text(
                    "A new branch from here; the other stays a click away.",
                    size="1",
                    color="gray",
                    class_name="lumina-hint",
                ),
                rx.spacer(),
                cancel_button(
                    MessageActions.cancel_edit, size="1", custom_attrs=testid("edit-cancel")
                ),
                rx.button(
                    "Save & send",
                    type="submit",
                    size="1",
                    custom_attrs={"data-testid": "edit-send"},
                ),
                align="center",
                width="100%",
                wrap="wrap",
            ),
            spacing="2",
            width="100%",
        ),
        on_submit=MessageActions.save_edit,
        reset_on_submit=False,
        width="100%",
        custom_attrs={"data-testid": "edit-form"},
    )
