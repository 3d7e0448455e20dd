"""The sidebar: agent picker, new conversation, search, the conversation list, and the
rename and delete dialogs. On narrow screens the same content sits in a drawer."""

from __future__ import annotations

import reflex as rx

from lumina_app.services.conversations import MAX_SEARCH_CHARS
from lumina_app.ui.routes import ACCOUNT, ADMIN, KEYS
from lumina_app.ui.state.base import AppState
from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.state.sidebar import SidebarState
from lumina_app.ui.view_models.views import ConversationView, HitView


def agent_picker() -> rx.Component:
    return rx.select.root(
        rx.select.trigger(width="100%", custom_attrs={"data-testid": "agent-picker"}),
        rx.select.content(
            rx.foreach(
                SidebarState.agents,
                lambda agent: rx.select.item(agent["name"], value=agent["id"]),
            )
        ),
        value=ChatState.agent_id,
        on_change=SidebarState.pick_agent,
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
                        rx.tooltip(
                            rx.icon(
                                "git-fork",
                                size=12,
                                color="var(--gray-10)",
                                custom_attrs={"data-testid": "fork-mark"},
                            ),
                            content="A fork of another conversation",
                        ),
                    ),
                    rx.moment(conv["updated"], from_now=True, size="1", color="gray"),
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


def rename_dialog() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title("Rename conversation"),
            rx.form(
                rx.vstack(
                    rx.input(
                        name="title",
                        default_value=SidebarState.rename_title,
                        max_length=255,
                        width="100%",
                        auto_focus=True,
                        custom_attrs={"data-testid": "rename-input"},
                    ),
                    rx.hstack(
                        rx.button(
                            "Cancel",
                            type="button",
                            variant="soft",
                            color_scheme="gray",
                            on_click=SidebarState.cancel_rename,
                        ),
                        rx.button(
                            "Save", type="submit", custom_attrs={"data-testid": "rename-save"}
                        ),
                        justify="end",
                        width="100%",
                    ),
                ),
                on_submit=SidebarState.save_rename,
            ),
        ),
        open=SidebarState.rename_id != "",
        on_open_change=lambda _open: SidebarState.cancel_rename(),
    )


def delete_dialog() -> rx.Component:
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title("Delete conversation?"),
            rx.alert_dialog.description(
                "“" + SidebarState.delete_title + "” and all its messages will be deleted for good."
            ),
            rx.hstack(
                rx.alert_dialog.cancel(
                    rx.button(
                        "Cancel",
                        variant="soft",
                        color_scheme="gray",
                        on_click=SidebarState.cancel_delete,
                    )
                ),
                rx.alert_dialog.action(
                    rx.button(
                        "Delete",
                        color_scheme="red",
                        on_click=SidebarState.confirm_delete,
                        custom_attrs={"data-testid": "delete-confirm"},
                    )
                ),
                justify="end",
                spacing="3",
                margin_top="1em",
            ),
        ),
        open=SidebarState.delete_id != "",
    )


def hit_item(hit: HitView) -> rx.Component:
    """A message a search found: opens its conversation scrolled to it."""
    return rx.link(
        rx.vstack(
            rx.text(hit["title"], size="1", weight="medium", class_name="lumina-ellipsis"),
            rx.box(
                rx.html(hit["snippet"]),
                font_size="var(--font-size-1)",
                color="var(--gray-11)",
                class_name="lumina-snippet",
            ),
            spacing="0",
            min_width="0",
        ),
        href=hit["url"],
        underline="none",
        color="inherit",
        padding="0.4em 0.6em",
        border_radius="var(--radius-3)",
        _hover={"background": "var(--gray-a3)"},
        width="100%",
        on_click=SidebarState.set_drawer_open(False),
        custom_attrs={"data-testid": "search-hit"},
    )


def hits() -> rx.Component:
    return rx.cond(
        SidebarState.hits.length() > 0,
        rx.vstack(
            rx.text("Messages", size="1", weight="bold", color="gray", padding_x="0.6em"),
            rx.foreach(SidebarState.hits, hit_item),
            spacing="1",
            width="100%",
            padding_top="0.5em",
        ),
    )


def account_link(label: str, href: str) -> rx.Component:
    return rx.link(
        rx.button(label, size="1", variant="ghost"),
        href=href,
        underline="none",
        custom_attrs={"data-testid": f"link-{href.strip('/')}"},
    )


def identity() -> rx.Component:
    """Who this browser acts as: the local operator, or a signed-in owner (their account
    pages, sign out)."""
    return rx.cond(
        AppState.local_mode,
        rx.tooltip(
            rx.badge(
                "Local mode · this machine only",
                variant="soft",
                color_scheme="gray",
                custom_attrs={"data-testid": "local-mode"},
            ),
            content="No API keys or accounts exist: only clients on this machine can use Lumina.",
        ),
        rx.vstack(
            rx.text(
                "Signed in as ",
                rx.text.strong(AppState.signed_in_as),
                size="1",
                color="gray",
                class_name="lumina-ellipsis",
                custom_attrs={"data-testid": "signed-in-as"},
            ),
            rx.hstack(
                rx.cond(
                    AppState.has_account,
                    rx.fragment(account_link("Account", ACCOUNT), account_link("API keys", KEYS)),
                ),
                rx.cond(AppState.is_admin, account_link("Admin", ADMIN)),
                rx.spacer(),
                rx.button(
                    "Sign out",
                    size="1",
                    variant="ghost",
                    on_click=rx.call_script("luminaSignOut()"),
                    custom_attrs={"data-testid": "sign-out"},
                ),
                align="center",
                width="100%",
                spacing="3",
            ),
            spacing="1",
            width="100%",
        ),
    )


def sidebar_content() -> rx.Component:
    return rx.vstack(
        rx.hstack(
            rx.icon("sparkles", color="var(--accent-9)"),
            rx.heading("Lumina", size="5"),
            align="center",
        ),
        agent_picker(),
        rx.link(
            rx.button(rx.icon("plus"), "New conversation", width="100%", variant="soft"),
            href="/chat/" + ChatState.agent_id,
            width="100%",
            on_click=SidebarState.set_drawer_open(False),
            custom_attrs={"data-testid": "new-conversation"},
        ),
        rx.input(
            rx.input.slot(rx.icon("search", size=14)),
            placeholder="Search titles and messages",
            value=SidebarState.search,
            on_change=SidebarState.set_search,
            max_length=MAX_SEARCH_CHARS,
            debounce_timeout=300,
            width="100%",
            custom_attrs={"data-testid": "search-input"},
        ),
        rx.box(
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
        ),
        identity(),
        spacing="3",
        height="100%",
        width="100%",
        padding="1em",
    )


def sidebar() -> rx.Component:
    return rx.box(
        sidebar_content(),
        width="18em",
        flex_shrink="0",
        height="100dvh",
        border_right="1px solid var(--gray-a5)",
        background="var(--gray-a2)",
        display=["none", "none", "block"],
        custom_attrs={"data-testid": "sidebar"},
    )


def drawer() -> rx.Component:
    return rx.drawer.root(
        rx.drawer.overlay(z_index="40"),
        rx.drawer.portal(
            rx.drawer.content(
                sidebar_content(),
                height="100%",
                width="85vw",
                max_width="20em",
                background="var(--color-panel-solid)",
                top="0",
                left="0",
                z_index="50",
                custom_attrs={"data-testid": "drawer"},
            )
        ),
        direction="left",
        open=SidebarState.drawer_open,
        on_open_change=SidebarState.set_drawer_open,
    )
