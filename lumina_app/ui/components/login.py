"""The sign-in page: why this browser is not let in, and (when keys are configured) a
form that signs it in with an API key. The key goes from the page straight to
``POST /api/v1/auth/login`` — never through the UI's socket or its state."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.state.login import LoginState

# Signs in over HTTP (so the server can set an HttpOnly cookie), then loads the page it was
# asked for: a new socket, which carries the cookie. Returns the error message on refusal.
AUTH_SCRIPT = """
window.luminaSignIn = async (payload) => {
  const response = await fetch("/api/v1/auth/login", {
    method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json"}, body: JSON.stringify(payload),
  });
  if (response.ok) {
    const next = new URLSearchParams(window.location.search).get("next") || "/";
    window.location.assign(next.startsWith("/") && !next.startsWith("//") ? next : "/");
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
SIGN_IN = rx.call_script(
    "luminaSignIn({apiKey: document.getElementById('api-key').value})",
    callback=LoginState.failed,
)


def key_form() -> rx.Component:
    return rx.form(
        rx.vstack(
            rx.input(
                id="api-key",
                type="password",
                placeholder="API key",
                auto_complete="current-password",
                required=True,
                width="100%",
                size="3",
                custom_attrs={"data-testid": "api-key"},
            ),
            rx.button(
                "Sign in",
                type="submit",
                size="3",
                width="100%",
                custom_attrs={"data-testid": "sign-in"},
            ),
            width="100%",
        ),
        on_submit=SIGN_IN,
        width="100%",
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
                rx.cond(LoginState.can_sign_in, key_form()),
                rx.cond(
                    LoginState.error != "",
                    rx.callout(
                        LoginState.error,
                        icon="triangle_alert",
                        color_scheme="red",
                        size="1",
                        width="100%",
                        custom_attrs={"data-testid": "sign-in-error"},
                    ),
                ),
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
