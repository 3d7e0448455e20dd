"""The composer: a bounded text box with Send (Stop while an answer streams), the hint
that keeps a message waiting during an answer, the count near the cap, and "Not sent"
with Retry; the paperclip and the chips of attached files (``components/attach.py``).
Its keys, draft, delivery, drops and pastes live in ``assets/lumina-composer.js``."""

from __future__ import annotations

import reflex as rx

from lumina_app.settings import get_settings
from lumina_app.ui.components.attach import chips, paperclip, refused, wait_note
from lumina_app.ui.state.chat import ChatState

COMPOSER_SCRIPT = "/lumina-composer.js"


def hint() -> rx.Component:
    return rx.cond(
        ChatState.streaming,
        rx.text(
            "The answer is still coming: what you type waits here and can be sent when it "
            "ends (Esc stops it).",
            size="1",
            color="gray",
            class_name="lumina-hint",
            custom_attrs={"data-testid": "composer-hint"},
        ),
    )


def unsent() -> rx.Component:
    """Shown by the script when a send could not reach the server (kept in the box)."""
    return rx.hstack(
        rx.icon("cloud-off", size=14, color="var(--amber-11)"),
        rx.text("Not sent: no connection to Lumina. Your message is kept.", size="1"),
        rx.spacer(),
        rx.button("Retry", size="1", type="button", custom_attrs={"data-testid": "retry-send"}),
        rx.button(
            "Dismiss",
            size="1",
            type="button",
            variant="ghost",
            color_scheme="gray",
            custom_attrs={"data-testid": "dismiss-unsent"},
        ),
        align="center",
        width="100%",
        padding="0.3em 0.6em",
        border_radius="var(--radius-2)",
        background="var(--amber-a3)",
        class_name="lumina-hidden",
        custom_attrs={"data-testid": "unsent"},
    )


def send_or_stop() -> rx.Component:
    return rx.cond(
        ChatState.streaming,
        rx.tooltip(
            rx.button(
                rx.icon("square"),
                "Stop",
                type="button",
                color_scheme="gray",
                size="3",
                on_click=ChatState.stop,
                custom_attrs={"data-testid": "stop-button"},
            ),
            content="Stop the answer (Esc)",
        ),
        rx.button(
            rx.icon("send"),
            "Send",
            type="submit",
            size="3",
            disabled=ChatState.agent_id == "",
            custom_attrs={"data-testid": "send-button"},
        ),
    )


def composer() -> rx.Component:
    cap = get_settings().max_task_chars
    return rx.form(
        rx.vstack(
            unsent(),
            refused(),
            wait_note(),
            chips(),
            rx.hstack(
                paperclip(),
                rx.text_area(
                    id="composer",
                    name="message",
                    placeholder="Message… (Enter to send, Shift+Enter for a new line)",
                    auto_height=True,
                    rows="1",
                    max_length=cap,
                    width="100%",
                    size="3",
                    max_height="min(40dvh, 18em)",
                    overflow_y="auto",
                    custom_attrs={"data-testid": "composer"},
                ),
                send_or_stop(),
                align="end",
                width="100%",
            ),
            rx.hstack(
                hint(),
                rx.spacer(),
                rx.text(
                    "",
                    size="1",
                    color="gray",
                    class_name="lumina-count lumina-hidden",
                    custom_attrs={"data-testid": "composer-count"},
                ),
                width="100%",
                min_height="0",
            ),
            rx.el.input(type="hidden", name="nonce", default_value=""),
            spacing="1",
            width="100%",
        ),
        on_submit=ChatState.send,
        reset_on_submit=False,
        width="100%",
        max_width="52em",
        margin_x="auto",
        padding="0.75em 1em 1em",
    )
