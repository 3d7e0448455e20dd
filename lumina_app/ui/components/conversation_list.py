"""The sidebar's list: the open agent's conversations, each with its menu, and paging."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components.sidebar_search import hits
from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.state.sidebar import SidebarState
from lumina_app.ui.view_models.views import ConversationView


def _mark(icon: str, tip: str, testid: str) -> rx.Component:
    """A small grey icon in a list row saying what kind of conversation it is."""
    return rx.tooltip(
        rx.icon(icon, size=12, color="var(--gray-10)", custom_attrs={"data-testid": testid}),
        content=tip,
    )


def conversation_item(conv: ConversationView) -> rx.Component:
    href = "/chat/" + ChatState.agent_id + "/" + conv["uuid"]
    active = ChatState.conversation_id == conv["uuid"]
    return rx.hstack(
        rx.link(
            rx.vstack(
                rx.text(
                    conv["title"],
                    size="2",
                    weight="medium",
                    trim="both",
                    class_name="lumina-ellipsis",
                ),
                rx.hstack(
                    rx.cond(
                        conv["forked"],
                        _mark("git-fork", "A fork of another conversation", "fork-mark"),
                    ),
                    rx.moment(conv["updated"], from_now=True, size="1", color="gray"),
                    rx.cond(
                        conv["temporary"],
                        _mark("eye-off", "Temporary: kept out of memory", "temporary-mark"),
                    ),
                    rx.cond(
                        conv["status"] == "running",
                        rx.badge("running", color_scheme="blue", size="1"),
                        rx.cond(
                            conv["status"] == "failed",
                            rx.badge("failed", color_scheme="red", size="1"),
                        ),
                    ),
                    spacing="2",
                    align="center",
                ),
                spacing="1",
                min_width="0",
            ),
            href=href,
            underline="none",
            color="inherit",
            flex="1",
            min_width="0",
            on_click=SidebarState.set_drawer_open(False),
            custom_attrs={"data-testid": "conversation-link"},
        ),
        rx.dropdown_menu.root(
            rx.dropdown_menu.trigger(
                rx.icon_button(
                    rx.icon("ellipsis", size=16),
                    variant="ghost",
                    size="1",
                    aria_label="Conversation actions",
                    custom_attrs={"data-testid": "conversation-menu"},
                )
            ),
            rx.dropdown_menu.content(
                rx.dropdown_menu.item(
                    "Rename", on_click=SidebarState.start_rename(conv["uuid"], conv["title"])
                ),
                rx.dropdown_menu.item(
                    "Delete",
                    color="red",
                    on_click=SidebarState.ask_delete(conv["uuid"], conv["title"]),
                ),
            ),
        ),
        padding="0.5em 0.6em",
        border_radius="var(--radius-3)",
        background=rx.cond(active, "var(--accent-a4)", "transparent"),
        _hover={"background": "var(--gray-a3)"},
        align="center",
        width="100%",
        custom_attrs={"data-testid": "conversation-item"},
    )


def conversation_list() -> rx.Component:
    """The scrolling part: conversations, then the messages a search found, then paging."""
    return rx.box(
        rx.vstack(
            rx.foreach(SidebarState.conversations, conversation_item),
            rx.cond(
                (SidebarState.conversations.length() == 0) & (SidebarState.hits.length() == 0),
                rx.text(
                    rx.cond(SidebarState.search != "", "No matches.", "No conversations yet."),
                    size="2",
                    color="gray",
                    padding="0.5em",
                ),
            ),
            hits(),
            rx.cond(
                SidebarState.next_cursor != "",
                rx.button(
                    "Load more",
                    variant="ghost",
                    size="1",
                    width="100%",
                    on_click=SidebarState.load_more,
                ),
            ),
            spacing="1",
            width="100%",
        ),
        overflow_y="auto",
        flex="1",
        min_height="0",
        width="100%",
    )
