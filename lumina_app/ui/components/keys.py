"""The API keys page (/keys): make a key (shown once, with a copy button), list, revoke."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components import confirm_dialog, row_button
from lumina_app.ui.components.secrets import reveal_dialog
from lumina_app.ui.components.shell import data_table, no_account, notice, section, shell
from lumina_app.ui.routes import KEYS
from lumina_app.ui.state.base import AppState
from lumina_app.ui.state.keys import KeysState
from lumina_app.ui.view_models.account_views import KeyRow

CREATE_KEY = rx.call_script("luminaCreateKey()", callback=KeysState.created)
USE = "Send it as Authorization: Bearer <key>. It is shown this once: copy it now."


def new_key_form() -> rx.Component:
    return section(
        "New key",
        rx.form(
            rx.hstack(
                rx.input(
                    id="key-name",
                    placeholder="What is it for? (e.g. backup script)",
                    max_length=64,
                    required=True,
                    flex="1",
                    custom_attrs={"data-testid": "key-name"},
                ),
                rx.button("Create key", type="submit", custom_attrs={"data-testid": "create-key"}),
                width="100%",
            ),
            on_submit=CREATE_KEY,
            width="100%",
        ),
    )


def key_item(row: KeyRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(row["name"], weight="medium")),
        rx.table.cell(rx.code(row["prefix"] + "…")),
        rx.table.cell(rx.moment(row["created"], from_now=True)),
        rx.table.cell(
            rx.cond(row["used"] != "", rx.moment(row["used"], from_now=True), rx.text("never"))
        ),
        rx.table.cell(
            confirm_dialog(
                row_button("Revoke", "revoke-key", color_scheme="red"),
                rx.alert_dialog.title("Revoke “" + row["name"] + "”?"),
                rx.alert_dialog.description("Programs using this key will be refused from now on."),
                "Revoke",
                KeysState.revoke(row["id"]),
                "confirm-revoke",
            )
        ),
        custom_attrs={"data-testid": "key-row"},
    )


def key_list() -> rx.Component:
    return section(
        "Your keys",
        rx.cond(
            KeysState.keys.length() == 0,
            rx.text("No keys yet.", color="gray", size="2"),
            data_table(("Name", "Key", "Created", "Last used", ""), KeysState.keys, key_item),
        ),
    )


def keys_page() -> rx.Component:
    return shell(
        KEYS,
        "API keys",
        rx.text(
            "Keys let programs use Lumina's API as you: they see your conversations.",
            color="gray",
        ),
        notice(KeysState.message, KeysState.error),
        rx.cond(
            AppState.has_account,
            rx.fragment(new_key_form(), key_list()),
            no_account("API keys"),
        ),
        reveal_dialog(KeysState.revealing, KeysState.reveal_title, USE, KeysState.close_reveal),
    )
