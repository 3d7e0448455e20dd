"""The admin page (/admin): create accounts, disable and enable them, reset passwords,
delete them with everything they own."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components import cancel_button, confirm_dialog, row_button
from lumina_app.ui.components.secrets import reveal_dialog
from lumina_app.ui.components.shell import data_table, notice, section, shell
from lumina_app.ui.routes import ADMIN
from lumina_app.ui.state.admin import AdminState
from lumina_app.ui.state.base import AppState
from lumina_app.ui.view_models.account_views import UserRow

CREATE_USER = rx.call_script("luminaCreateUser()", callback=AdminState.created)
RESET = rx.call_script("luminaResetPassword()", callback=AdminState.reset_done)
SHOWN_ONCE = "Give it to them safely; it is shown this once. They are asked to change it."


def labelled(label: str, control: rx.Component) -> rx.Component:
    return rx.vstack(rx.text(label, size="2", weight="medium"), control, spacing="1")


def create_form() -> rx.Component:
    return section(
        "New account",
        rx.form(
            rx.flex(
                labelled(
                    "Username",
                    rx.input(
                        id="new-username",
                        required=True,
                        max_length=64,
                        auto_complete="off",
                        custom_attrs={"data-testid": "new-username"},
                    ),
                ),
                labelled(
                    "Role",
                    rx.select(
                        ["member", "admin"],
                        value=AdminState.new_role,
                        on_change=AdminState.set_new_role,
                        custom_attrs={"data-testid": "new-role"},
                    ),
                ),
                labelled(
                    "Password (empty: generate one)",
                    rx.input(
                        id="new-user-password",
                        type="password",
                        auto_complete="new-password",
                        custom_attrs={"data-testid": "new-user-password"},
                    ),
                ),
                rx.el.input(type="hidden", id="new-role", value=AdminState.new_role),
                rx.button("Create", type="submit", custom_attrs={"data-testid": "create-user"}),
                spacing="3",
                align="end",
                wrap="wrap",
            ),
            on_submit=CREATE_USER,
        ),
    )


def user_item(row: UserRow) -> rx.Component:
    name = row["username"]
    return rx.table.row(
        rx.table.cell(rx.text(name, weight="medium")),
        rx.table.cell(
            rx.badge(row["role"], color_scheme=rx.cond(row["role"] == "admin", "violet", "gray"))
        ),
        rx.table.cell(rx.moment(row["created"], from_now=True)),
        rx.table.cell(
            rx.cond(
                row["disabled"],
                rx.badge("disabled", color_scheme="red"),
                rx.cond(
                    row["must_change"],
                    rx.badge("temporary password", color_scheme="amber"),
                    rx.badge("active", color_scheme="green"),
                ),
            ),
            custom_attrs={"data-testid": "user-state"},
        ),
        rx.table.cell(
            rx.hstack(
                rx.cond(
                    row["disabled"],
                    row_button("Enable", "enable-user", on_click=AdminState.enable(name)),
                    row_button(
                        "Disable",
                        "disable-user",
                        color_scheme="red",
                        disabled=name == AppState.signed_in_as,
                        on_click=AdminState.disable(name),
                    ),
                ),
                row_button(
                    "Reset password",
                    "reset-password",
                    disabled=name == AppState.signed_in_as,
                    on_click=AdminState.open_reset(name),
                ),
                delete_button(name),
                spacing="2",
            )
        ),
        custom_attrs={"data-testid": "user-row", "data-username": name},
    )


def delete_button(name: rx.Var[str]) -> rx.Component:
    """Delete, after a second "yes" naming what goes."""
    return confirm_dialog(
        row_button(
            "Delete", "delete-user", color_scheme="red", disabled=name == AppState.signed_in_as
        ),
        rx.alert_dialog.title("Delete ", name, "?"),
        rx.alert_dialog.description(
            "The account and everything it owns — conversations, memories, keys, "
            "sessions, files — are deleted for good.",
            size="2",
        ),
        "Delete for good",
        AdminState.delete(name),
        "confirm-delete-user",
        color_scheme="gray",
    )


def user_list() -> rx.Component:
    return section(
        "Accounts",
        data_table(("Username", "Role", "Created", "State", ""), AdminState.users, user_item),
    )


def shut_out(control_id: str, label: str) -> rx.Component:
    """A native checkbox, checked by default: the reset's request reads it (``secrets``)."""
    return rx.el.label(
        rx.el.input(
            type="checkbox",
            id=control_id,
            default_checked=True,
            custom_attrs={"data-testid": control_id},
        ),
        rx.text(label, size="2"),
        display="flex",
        gap="0.5em",
        align_items="center",
    )


def reset_dialog() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title("Reset the password of " + AdminState.reset_for),
            rx.dialog.description(
                "Type a new password, or leave it empty to generate a temporary one.",
                size="2",
                color="gray",
            ),
            rx.form(
                rx.vstack(
                    rx.el.input(type="hidden", id="reset-username", value=AdminState.reset_for),
                    rx.input(
                        id="reset-password",
                        type="password",
                        placeholder="New password (optional)",
                        auto_complete="new-password",
                        width="100%",
                        custom_attrs={"data-testid": "reset-password-input"},
                    ),
                    shut_out("reset-end-sessions", "Sign them out of every browser"),
                    shut_out("reset-revoke-keys", "Revoke all their API keys"),
                    rx.flex(
                        cancel_button(AdminState.close_reset),
                        rx.button(
                            "Reset", type="submit", custom_attrs={"data-testid": "confirm-reset"}
                        ),
                        spacing="3",
                        justify="end",
                        width="100%",
                    ),
                    margin_top="1em",
                ),
                on_submit=RESET,
            ),
        ),
        open=AdminState.reset_for != "",
    )


def not_found() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.heading("Not found", size="5"),
            rx.text("There is no page at this address.", custom_attrs={"data-testid": "not-found"}),
            rx.link("Back to the chat", href="/"),
            align="center",
        ),
        padding="4em",
        height="100dvh",
    )


def admin_page() -> rx.Component:
    page = rx.cond(
        AppState.is_admin,
        shell(
            ADMIN,
            "Admin",
            notice(AdminState.message, AdminState.error),
            create_form(),
            user_list(),
            reset_dialog(),
            reveal_dialog(
                AdminState.revealing, AdminState.reveal_title, SHOWN_ONCE, AdminState.close_reveal
            ),
        ),
        not_found(),
    )
    return rx.cond(rx.State.is_hydrated, page, rx.fragment())  # no "not found" flash
