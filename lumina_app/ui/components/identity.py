"""Who this browser acts as, at the foot of the sidebar."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.routes import ACCOUNT, ADMIN, KEYS
from lumina_app.ui.state.base import AppState


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
