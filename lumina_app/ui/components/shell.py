"""The frame of the account pages: back to the chat, the tabs (Account, API keys, and Admin
for admins), who is signed in, and what every such page needs on it."""

from __future__ import annotations

from collections.abc import Callable

import reflex as rx

from lumina_app.ui.components import said, testid
from lumina_app.ui.components.heartbeat import heartbeat
from lumina_app.ui.components.login import AUTH_SCRIPT
from lumina_app.ui.components.secrets import secrets_script
from lumina_app.ui.routes import ACCOUNT, ADMIN, HOME, KEYS
from lumina_app.ui.state.base import AppState


def tab(label: str, href: str, here: str) -> rx.Component:
    return rx.link(
        rx.button(
            label,
            variant="solid" if href == here else "soft",
            color_scheme=None if href == here else "gray",
            size="2",
        ),
        href=href,
        underline="none",
        custom_attrs={"data-testid": f"tab-{href.strip('/')}"},
    )


def top(here: str) -> rx.Component:
    return rx.hstack(
        rx.link(
            rx.hstack(rx.icon("arrow-left", size=16), rx.text("Chat"), align="center"),
            href=HOME,
            underline="none",
            custom_attrs={"data-testid": "back-to-chat"},
        ),
        rx.spacer(),
        rx.cond(
            AppState.has_account,
            rx.hstack(tab("Account", ACCOUNT, here), tab("API keys", KEYS, here), spacing="2"),
        ),
        rx.cond(AppState.is_admin, tab("Admin", ADMIN, here)),
        rx.cond(
            ~AppState.local_mode,  # local mode has nobody signed in
            rx.button(
                "Sign out",
                size="2",
                variant="soft",
                color_scheme="gray",
                on_click=rx.call_script("luminaSignOut()"),
                custom_attrs={"data-testid": "sign-out"},
            ),
        ),
        align="center",
        width="100%",
        spacing="3",
        wrap="wrap",
    )


def shell(here: str, title: str, *content: rx.Component) -> rx.Component:
    return rx.box(
        rx.vstack(
            top(here),
            rx.hstack(
                rx.heading(title, size="6"),
                rx.cond(
                    AppState.signed_in_as != "",
                    rx.text(
                        "Signed in as ",
                        rx.text.strong(AppState.signed_in_as),
                        color="gray",
                        size="2",
                        custom_attrs={"data-testid": "signed-in-as"},
                    ),
                ),
                align="baseline",
                justify="between",
                width="100%",
                wrap="wrap",
            ),
            *content,
            spacing="5",
            width="100%",
            max_width="56em",
            margin="0 auto",
            padding="2em 1.25em",
        ),
        heartbeat(),
        rx.script(AUTH_SCRIPT),
        secrets_script(),
        width="100%",
        min_height="100dvh",
    )


def no_account(what: str) -> rx.Component:
    """What the account pages say to the local operator or a key holder."""
    return rx.callout(
        rx.cond(
            AppState.local_mode,
            "Local mode: there are no user accounts yet. Create the first one with "
            "python -m lumina_app users add NAME --admin (after that, everyone signs in).",
            f"{what} belong to user accounts; you signed in with a configured API key.",
        ),
        icon="info",
        width="100%",
        custom_attrs={"data-testid": "no-account"},
    )


def notice(message: rx.Var[str], error: rx.Var[str]) -> rx.Component:
    """The outcome of the last action: green, or red."""
    return rx.fragment(
        said(message, "check", "green", width="100%", custom_attrs=testid("notice")),
        said(error, "triangle_alert", "red", width="100%", custom_attrs=testid("error")),
    )


def section(title: str, *children: rx.Component, **props) -> rx.Component:
    return rx.card(
        rx.vstack(rx.heading(title, size="4"), *children, spacing="3", width="100%"),
        width="100%",
        **props,
    )


def data_table(columns: tuple[str, ...], rows: rx.Var, row: Callable) -> rx.Component:
    """A table of ``rows`` (a list var), one ``row(item)`` each, under ``columns``."""
    return rx.table.root(
        rx.table.header(rx.table.row(*(rx.table.column_header_cell(c) for c in columns))),
        rx.table.body(rx.foreach(rows, row)),
        width="100%",
        variant="surface",
    )
