"""The sidebar's list: the person's conversations of every agent, each with its agent
and its menu — pinned on top, then the rest (paged), archived apart at the bottom."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components.conversation_menu import conversation_menu
from lumina_app.ui.components.sidebar_search import hits
from lumina_app.ui.components.times import short_time
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
    href = "/chat/" + conv["agent_id"] + "/" + conv["uuid"]
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
                    rx.text(
                        conv["agent"],
                        size="1",
                        color="gray",
                        class_name="lumina-ellipsis lumina-row-agent",
                        custom_attrs={"data-testid": "conversation-agent"},
                    ),
                    rx.moment(
                        conv["updated"],
                        from_now=True,
                        class_name="lumina-time lumina-time-long",
                    ),
                    short_time(conv["updated"], class_name="lumina-time lumina-time-short"),
                    rx.cond(
                        conv["temporary"],
                        _mark("eye-off", "Temporary: kept out of memory", "temporary-mark"),
                    ),
                    rx.cond(
                        conv["status"] == "running",
                        rx.badge("running", color_scheme="blue", size="1", flex_shrink="0"),
                        rx.cond(
                            conv["status"] == "failed",
                            rx.badge("failed", color_scheme="red", size="1", flex_shrink="0"),
                        ),
                    ),
                    spacing="2",
                    align="center",
                    min_width="0",
                    max_width="100%",
                    overflow="hidden",  # a narrow row: the agent's name gives way, not the menu
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
        conversation_menu(conv),
        padding="0.5em 0.6em",
        border_radius="var(--radius-3)",
        background=rx.cond(active, "var(--accent-a4)", "transparent"),
        _hover={"background": "var(--gray-a3)"},
        align="center",
        width="100%",
        custom_attrs={"data-testid": "conversation-item"},
    )


def _heading(text: str, testid: str) -> rx.Component:
    return rx.text(
        text,
        size="1",
        weight="bold",
        color="gray",
        padding="0.5em 0.6em 0",
        custom_attrs={"data-testid": testid},
    )


def _section(rows, testid: str) -> rx.Component:
    return rx.vstack(
        rx.foreach(rows, conversation_item),
        spacing="1",
        width="100%",
        custom_attrs={"data-testid": testid},
    )


def _archived() -> rx.Component:
    """A toggle at the bottom, and when on, the archived ones (still open and searchable)."""
    return rx.cond(
        SidebarState.search == "",
        rx.vstack(
            rx.button(
                rx.cond(
                    SidebarState.show_archived,
                    rx.icon("chevron-down", size=14),
                    rx.icon("chevron-right", size=14),
                ),
                "Archived",
                variant="ghost",
                color_scheme="gray",
                size="1",
                on_click=SidebarState.set_show_archived(~SidebarState.show_archived),
                custom_attrs={"data-testid": "archived-toggle"},
            ),
            rx.cond(
                SidebarState.show_archived,
                rx.cond(
                    SidebarState.archived.length() > 0,
                    _section(SidebarState.archived, "archived-section"),
                    rx.text("Nothing archived.", size="1", color="gray", padding_x="0.6em"),
                ),
            ),
            spacing="1",
            width="100%",
            padding_top="0.5em",
        ),
    )


def conversation_list() -> rx.Component:
    """The scrolling part: pinned, the rest (or what a search found, then the messages it
    found), paging, then the archived ones."""
    has_pinned = SidebarState.pinned.length() > 0
    return rx.box(
        rx.vstack(
            rx.cond(
                has_pinned,
                rx.fragment(
                    _heading("Pinned", "pinned-heading"),
                    _section(SidebarState.pinned, "pinned-section"),
                    rx.cond(
                        SidebarState.conversations.length() > 0,
                        _heading("Recent", "recent-heading"),
                    ),
                ),
            ),
            _section(SidebarState.conversations, "recent-section"),
            rx.cond(
                (SidebarState.conversations.length() == 0)
                & (SidebarState.hits.length() == 0)
                & ~has_pinned,
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
            _archived(),
            spacing="1",
            width="100%",
        ),
        overflow_y="auto",
        flex="1",
        min_height="0",
        width="100%",
    )
