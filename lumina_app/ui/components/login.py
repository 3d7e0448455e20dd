"""The sign-in page: why this browser is not let in, and the ways in — a username and
password once accounts exist, an API key when LUMINA_API_KEYS is set (both: a switch).
What is typed goes from the page straight to ``POST /api/v1/auth/login`` — never through
the UI's socket or its state."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components import said, testid
from lumina_app.ui.state.login import LoginState

# Signs in over HTTP (so the server can set an HttpOnly cookie), then loads the page it was
# asked for (the account page first when the password was set by someone else): a new
# socket, which carries the cookie. Returns the error message on refusal.
AUTH_SCRIPT = """
window.luminaSignIn = async (payload) => {
  const response = await fetch("/api/v1/auth/login", {
    method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json"}, body: JSON.stringify(payload),
  });
  if (response.ok) {
    const body = await response.json();
    const asked = new URLSearchParams(window.location.search).get("next") || "/";
    const next = asked.startsWith("/") && !asked.startsWith("//") ? asked : "/";
    window.location.assign(body.mustChangePassword ? "/account" : next);
    return "";
  }
  try { return (await response.json()).error.message; }
  catch (e) { return "Sign-in failed (HTTP " + response.status + ")."; }
};
window.luminaSignOut = async () => {
  await fetch("/api/v1/auth/logout", {
    method: "POST", credentials: "same-origin", headers: {"X-Requested-With": "lumina"},
  });
  window.location.assign("/login");
};
"""
_VALUE = "document.getElementById('{}').value"
SIGN_IN_WITH_KEY = rx.call_script(
    "luminaSignIn({apiKey: " + _VALUE.format("api-key") + "})", callback=LoginState.failed
)
SIGN_IN_WITH_PASSWORD = rx.call_script(
    "luminaSignIn({username: "
    + _VALUE.format("username")
    + ", password: "
    + _VALUE.format("password")
    + "})",
    callback=LoginState.failed,
)


def field(id_: str, placeholder: str, kind: str, complete: str) -> rx.Component:
    return rx.input(
        id=id_,
        type=kind,
        placeholder=placeholder,
        auto_complete=complete,
        required=True,
        width="100%",
        size="3",
        custom_attrs={"data-testid": id_},
    )


def submit() -> rx.Component:
    return rx.button(
        "Sign in", type="submit", size="3", width="100%", custom_attrs={"data-testid": "sign-in"}
    )


def password_form() -> rx.Component:
    return rx.form(
        rx.vstack(
            field("username", "Username", "text", "username"),
            field("password", "Password", "password", "current-password"),
            submit(),
            width="100%",
        ),
        on_submit=SIGN_IN_WITH_PASSWORD,
        width="100%",
    )


def key_form() -> rx.Component:
    return rx.form(
        rx.vstack(field("api-key", "API key", "password", "current-password"), submit()),
        on_submit=SIGN_IN_WITH_KEY,
        width="100%",
    )


def switch() -> rx.Component:
    """Both ways in: the other one is a link away."""
    return rx.cond(
        LoginState.with_password & LoginState.with_key,
        rx.link(
            rx.cond(LoginState.use_key, "Sign in with a username instead", "Use an API key"),
            size="2",
            on_click=LoginState.set_use_key(~LoginState.use_key),
            custom_attrs={"data-testid": "switch-sign-in"},
        ),
    )


def error() -> rx.Component:
    return said(
        LoginState.error,
        "triangle_alert",
        "red",
        width="100%",
        custom_attrs=testid("sign-in-error"),
    )


def login_page() -> rx.Component:
    return rx.center(
        rx.card(
            rx.vstack(
                rx.hstack(
                    rx.icon("sparkles", color="var(--accent-9)"),
                    rx.heading("Lumina", size="6"),
                    align="center",
                ),
                rx.text(LoginState.reason, color="gray", custom_attrs={"data-testid": "reason"}),
                rx.cond(
                    LoginState.use_key,
                    key_form(),
                    rx.cond(LoginState.with_password, password_form()),
                ),
                error(),
                switch(),
                spacing="4",
                width="100%",
            ),
            size="4",
            width="24em",
            max_width="92vw",
        ),
        rx.script(AUTH_SCRIPT),
        height="100dvh",
    )
