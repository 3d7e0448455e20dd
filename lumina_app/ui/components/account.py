"""The account page (/account): change the password, see and end signed-in sessions,
download everything, delete the account with all it owns."""

from __future__ import annotations

from typing import Any

import reflex as rx

from lumina_app.ui.components import row_button, testid
from lumina_app.ui.components.shell import data_table, no_account, notice, section, shell
from lumina_app.ui.routes import ACCOUNT
from lumina_app.ui.state.account import AccountState
from lumina_app.ui.state.base import AppState
from lumina_app.ui.view_models.account_views import SessionRow

CHANGE_PASSWORD = rx.call_script("luminaChangePassword()", callback=AccountState.password_done)
DELETE_ACCOUNT = rx.call_script("luminaDeleteAccount()", callback=AccountState.delete_done)
EXPORT_URL = "/api/v1/account/export"


def field(id_: str, label: str, **props: Any) -> rx.Component:
    """A required input under its label; its id is its test id too."""
    return rx.vstack(
        rx.text(label, size="2", weight="medium", as_="label", html_for=id_),
        rx.input(id=id_, **props, required=True, width="100%", custom_attrs=testid(id_)),
        spacing="1",
        width="100%",
    )


def password_field(id_: str, label: str, complete: str) -> rx.Component:
    return field(id_, label, type="password", auto_complete=complete)


def password_form() -> rx.Component:
    return section(
        "Password",
        rx.cond(
            AccountState.must_change_password,
            rx.callout(
                "Your password was set by an administrator: choose your own now.",
                icon="key-round",
                color_scheme="amber",
                size="1",
                custom_attrs={"data-testid": "must-change"},
            ),
        ),
        rx.form(
            rx.vstack(
                password_field("current-password", "Current password", "current-password"),
                password_field("new-password", "New password", "new-password"),
                password_field("new-password-again", "New password, again", "new-password"),
                rx.text(
                    "At least ",
                    AccountState.min_length,
                    " characters. Changing it signs out your other browsers.",
                    size="1",
                    color="gray",
                ),
                rx.button(
                    "Change password",
                    type="submit",
                    custom_attrs={"data-testid": "change-password"},
                ),
                width="100%",
                max_width="24em",
            ),
            on_submit=CHANGE_PASSWORD,
            reset_on_submit=False,
        ),
    )


def session_item(row: SessionRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.tooltip(rx.text(row["browser"]), content=row["agent"])),
        rx.table.cell(row["address"]),
        rx.table.cell(rx.moment(row["created"], from_now=True)),
        rx.table.cell(rx.moment(row["seen"], from_now=True)),
        rx.table.cell(
            rx.cond(
                row["current"],
                rx.badge("This browser", color_scheme="green"),
                row_button(
                    "Sign out",
                    "revoke-session",
                    color_scheme="red",
                    on_click=AccountState.revoke(row["id"]),
                ),
            )
        ),
        custom_attrs={"data-testid": "session-row"},
    )


def sessions() -> rx.Component:
    return section(
        "Signed-in browsers",
        data_table(
            ("Browser", "Address", "Signed in", "Last seen", ""),
            AccountState.sessions,
            session_item,
        ),
        rx.button(
            "Sign out all other browsers",
            variant="soft",
            color_scheme="red",
            on_click=AccountState.revoke_others,
            disabled=AccountState.sessions.length() < 2,
            custom_attrs={"data-testid": "revoke-others"},
        ),
    )


def export_section() -> rx.Component:
    return section(
        "Your data",
        rx.text(
            "One zip of everything you have here: every conversation (the archive's folders "
            "and a Markdown transcript each), what the agents remember about you, and your "
            "account's settings. Passwords and keys are never in it.",
            size="2",
            color="gray",
        ),
        rx.button(
            rx.icon("download", size=14),
            "Download everything",
            variant="soft",
            on_click=rx.call_script(f"luminaDownload({EXPORT_URL!r})"),
            custom_attrs={"data-testid": "export-everything"},
        ),
    )


def delete_section() -> rx.Component:
    return section(
        "Delete this account",
        rx.text(
            "Deletes the account and everything it owns — conversations, memories, keys, "
            "sessions and files — for good. Download everything first if you want a copy.",
            size="2",
            color="gray",
        ),
        rx.form(
            rx.vstack(
                password_field("delete-password", "Your password", "current-password"),
                field(
                    "delete-confirm",
                    "Type your username to confirm",
                    auto_complete="off",
                    placeholder=AppState.signed_in_as,
                ),
                rx.button(
                    "Delete my account and everything it owns",
                    type="submit",
                    color_scheme="red",
                    custom_attrs={"data-testid": "delete-account"},
                ),
                width="100%",
                max_width="24em",
            ),
            on_submit=DELETE_ACCOUNT,
            reset_on_submit=False,
        ),
        border="1px solid var(--red-6)",
    )


def account_page() -> rx.Component:
    return shell(
        ACCOUNT,
        "Account",
        notice(AccountState.message, AccountState.error),
        rx.cond(
            AppState.has_account,
            rx.fragment(password_form(), sessions(), export_section(), delete_section()),
            rx.fragment(no_account("Passwords and sessions"), export_section()),
        ),
    )
