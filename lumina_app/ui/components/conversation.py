"""The main pane: header, banners, the message list (paged upwards) and the live turn."""

from __future__ import annotations

from typing import Any

import reflex as rx

from lumina_app.ui.components import said, testid
from lumina_app.ui.components.attach import drop_hint
from lumina_app.ui.components.composer import composer
from lumina_app.ui.components.message import (
    bubble,
    message_item,
    question_body,
    steps_and_answer,
)
from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.state.health import HealthState
from lumina_app.ui.state.sidebar import SidebarState


def header() -> rx.Component:
    return rx.hstack(
        rx.icon_button(
            rx.icon("menu"),
            variant="ghost",
            on_click=SidebarState.set_drawer_open(True),
            display=["flex", "flex", "none"],
            aria_label="Open conversations",
            custom_attrs={"data-testid": "open-drawer"},
        ),
        rx.vstack(
            rx.heading(
                rx.cond(ChatState.title != "", ChatState.title, "New conversation"),
                size="4",
                class_name="lumina-ellipsis",
                custom_attrs={"data-testid": "conversation-title"},
            ),
            rx.hstack(
                rx.text(ChatState.agent_name, size="1", color="gray"),
                forked_from(),
                rx.cond(
                    ChatState.temporary & (ChatState.conversation_id != ""),
                    rx.tooltip(
                        rx.badge(
                            rx.icon("eye-off", size=12),
                            "Temporary",
                            color_scheme="gray",
                            variant="outline",
                            size="1",
                            custom_attrs={"data-testid": "temporary-badge"},
                        ),
                        content="Not read from or written to memory",
                    ),
                ),
                spacing="2",
                align="center",
            ),
            spacing="0",
            min_width="0",
            flex="1",
        ),
        temporary_switch(),  # no spacer: the title (flex 1) takes all the room there is
        rx.color_mode.button(variant="ghost"),
        align="center",
        width="100%",
        padding="0.75em 1em",
        border_bottom="1px solid var(--gray-a5)",
    )


def temporary_switch() -> rx.Component:
    """ChatGPT's "Temporary chat": before a conversation starts, keep it out of memory."""
    return rx.cond(
        (ChatState.conversation_id == "") & ~ChatState.streaming & (ChatState.agent_id != ""),
        rx.tooltip(
            rx.el.label(
                rx.hstack(
                    rx.switch(
                        checked=ChatState.temporary,
                        on_change=ChatState.set_temporary,
                        size="1",
                        custom_attrs={"data-testid": "temporary-toggle"},
                    ),
                    rx.text("Temporary chat", size="1", display=["none", "inline"]),
                    spacing="2",
                    align="center",
                ),
            ),
            content="Nothing from this chat is remembered, and no memory is used in it",
        ),
    )


def forked_from() -> rx.Component:
    """On a fork: where it came from, linked (plain text once the original is gone)."""
    return rx.cond(
        ChatState.parent_title != "",
        rx.hstack(
            rx.icon("git-fork", size=12, color="var(--gray-10)"),
            rx.text("forked from", size="1", color="gray"),
            rx.cond(
                ChatState.parent_url != "",
                rx.link(ChatState.parent_title, href=ChatState.parent_url, size="1"),
                rx.text(ChatState.parent_title, size="1", color="gray"),
            ),
            spacing="1",
            align="center",
            min_width="0",
            class_name="lumina-ellipsis",
            custom_attrs={"data-testid": "forked-from"},
        ),
    )


def banners() -> rx.Component:
    return rx.fragment(
        said(HealthState.banner, "info", "amber", custom_attrs=testid("health-banner")),
        said(ChatState.error, "triangle_alert", "red", custom_attrs=testid("chat-error")),
    )


def live_turn() -> rx.Component:
    """The question just sent and the answer as it streams in."""
    return rx.cond(
        ChatState.streaming,
        rx.fragment(
            rx.cond(
                (ChatState.pending_user != "") | (ChatState.pending_files.length() > 0),
                bubble(
                    "user",
                    "You",
                    ChatState.pending_time,
                    question_body(ChatState.pending_user, ChatState.pending_files),
                    "",
                    "",
                    "pending-message",
                ),
            ),
            bubble(
                "assistant",
                ChatState.agent_name,
                "",
                rx.cond(
                    (ChatState.stream_text != "")
                    | (ChatState.stream_thinking != "")
                    | (ChatState.live_tools.length() > 0)
                    | (ChatState.live_steps.length() > 0),
                    steps_and_answer(
                        ChatState.live_steps,
                        ChatState.stream_text,
                        ChatState.live_tools,
                        ChatState.stream_thinking,
                    ),
                    rx.hstack(rx.spinner(size="1"), rx.text("Thinking…", size="2", color="gray")),
                ),
                "streaming",
                "",
                "streaming-message",
            ),
        ),
    )


def empty_state() -> rx.Component:
    return rx.cond(
        (ChatState.messages.length() == 0) & ~ChatState.streaming,
        rx.center(
            rx.vstack(
                rx.heading(ChatState.agent_name, size="6"),
                rx.text(
                    ChatState.agent_description, color="gray", text_align="center", max_width="32em"
                ),
                rx.text(
                    rx.cond(
                        ChatState.temporary,
                        "Temporary chat: nothing here is remembered, and no memory is used.",
                        "Ask anything: answers stream in, and what matters is remembered "
                        "across your conversations.",
                    ),
                    size="2",
                    color="gray",
                    custom_attrs={"data-testid": "empty-hint"},
                ),
                align="center",
            ),
            padding_y="4em",
        ),
    )


def _load_more(shown: rx.Var, label: str, on_click: Any, **attrs: Any) -> rx.Component:
    """The button that pages the list (older rows above it, newer below)."""
    return rx.cond(
        shown,
        rx.center(
            rx.button(label, variant="soft", size="1", on_click=on_click, **attrs),
            padding_y="0.5em",
        ),
    )


def message_list() -> rx.Component:
    # column-reverse keeps the view pinned to the newest message as text streams in.
    return rx.box(
        rx.box(
            _load_more(
                ChatState.has_older, "Load older messages", ChatState.load_older, id="load-older"
            ),
            empty_state(),
            rx.foreach(ChatState.messages, message_item),
            _load_more(
                ChatState.has_newer,
                "Load newer messages",
                ChatState.load_newer,
                custom_attrs={"data-testid": "load-newer"},
            ),
            live_turn(),
            max_width="52em",
            margin_x="auto",
            padding_x="1em",
            width="100%",
        ),
        id="message-list",
        display="flex",
        flex_direction="column-reverse",
        overflow_y="auto",
        flex="1",
        min_height="0",
        width="100%",
    )


def jump_to_latest() -> rx.Component:
    """Shown by the script while the list is scrolled up from its end."""
    return rx.button(
        rx.icon("arrow-down", size=14),
        "Jump to latest",
        size="1",
        variant="surface",
        radius="full",
        position="absolute",
        bottom="0.75em",
        left="50%",
        transform="translateX(-50%)",
        z_index="5",
        box_shadow="var(--shadow-3)",
        class_name="lumina-hidden",
        custom_attrs={"data-testid": "jump-latest"},
    )


def conversation_pane() -> rx.Component:
    return rx.vstack(
        header(),
        banners(),
        rx.cond(
            ChatState.not_found != "",
            rx.center(
                rx.vstack(
                    rx.heading("Not found", size="5"),
                    rx.text(ChatState.not_found, custom_attrs={"data-testid": "not-found"}),
                    align="center",
                ),
                padding="4em",
                flex="1",
            ),
            rx.fragment(
                rx.box(
                    message_list(),
                    jump_to_latest(),
                    drop_hint(),
                    position="relative",
                    flex="1",
                    min_height="0",
                    width="100%",
                    display="flex",
                ),
                composer(),
                # Clicked by the script when the connection is back: read the page again.
                rx.el.button(
                    id="lumina-reconnected",
                    type="button",
                    on_click=ChatState.reconnected,
                    class_name="lumina-hidden",
                    aria_hidden="true",
                    tab_index=-1,
                ),
            ),
        ),
        spacing="0",
        height="100dvh",
        flex="1",
        min_width="0",
        id="chat-column",  # where a drop of files lands (assets/lumina-composer.js)
    )
