"""Secrets on the account pages — passwords typed, keys and temporary passwords shown once —
go between the page and the REST API directly (``fetch`` with the session cookie), never
through the UI's socket or its state, which may live in Redis. The states get only the
outcome (``{ok, error, ...}``); a secret to show waits in the page's memory until the
reveal dialog puts it in its box, and is dropped when the dialog closes."""

from __future__ import annotations

import reflex as rx

SECRETS_SCRIPT = """
window.luminaApi = async (method, path, body) => {
  const response = await fetch(path, {
    method, credentials: "same-origin",
    headers: {"Content-Type": "application/json"},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await response.json(); } catch (e) {}
  if (response.ok) return {ok: true, data};
  const said = data && data.error && data.error.message;
  return {ok: false, error: said || ("The server answered HTTP " + response.status + ".")};
};
window.luminaField = (id) => {
  const el = document.getElementById(id);
  return el ? el.value : "";
};
window.luminaChecked = (id) => {
  const el = document.getElementById(id);
  return el ? el.checked : true;
};
window.luminaClear = (...ids) => {
  for (const id of ids) { const el = document.getElementById(id); if (el) el.value = ""; }
};
window.luminaKeep = (secret) => { window.__luminaSecret = secret || ""; };
window.luminaShowSecret = () => {
  const el = document.getElementById("revealed-secret");
  if (el) { el.value = window.__luminaSecret || ""; el.select(); }
};
window.luminaForgetSecret = () => { window.__luminaSecret = ""; luminaClear("revealed-secret"); };
window.luminaCopySecret = async () => {
  const el = document.getElementById("revealed-secret");
  if (!el) return;
  try { await navigator.clipboard.writeText(el.value); }
  catch (e) { el.select(); document.execCommand("copy"); }
};
window.luminaChangePassword = async () => {
  const f = luminaField;
  if (f("new-password") !== f("new-password-again"))
    return {ok: false, error: "The new passwords do not match."};
  const r = await luminaApi("POST", "/api/v1/account/password",
    {currentPassword: f("current-password"), newPassword: f("new-password")});
  if (!r.ok) return r;
  luminaClear("current-password", "new-password", "new-password-again");
  return {ok: true, ended: r.data.otherSessionsEnded};
};
window.luminaDownload = (path) => {
  const link = document.createElement("a");
  link.href = path; link.download = ""; document.body.appendChild(link);
  link.click(); link.remove();
};
window.luminaDeleteAccount = async () => {
  const r = await luminaApi("POST", "/api/v1/account/delete",
    {password: luminaField("delete-password"), confirm: luminaField("delete-confirm")});
  luminaClear("delete-password");
  if (!r.ok) return r;
  window.location.assign("/login");
  return {ok: true, conversations: r.data.conversations};
};
window.luminaCreateKey = async () => {
  const r = await luminaApi("POST", "/api/v1/keys", {name: luminaField("key-name")});
  if (!r.ok) return r;
  luminaKeep(r.data.key);
  luminaClear("key-name");
  return {ok: true, name: r.data.name};
};
window.luminaCreateUser = async () => {
  const body = {username: luminaField("new-username"), role: luminaField("new-role")};
  const password = luminaField("new-user-password");
  if (password) body.password = password;
  const r = await luminaApi("POST", "/api/v1/admin/users", body);
  if (!r.ok) return r;
  luminaClear("new-username", "new-user-password");
  luminaKeep(r.data.temporaryPassword);
  return {ok: true, username: r.data.user.username, temporary: !!r.data.temporaryPassword};
};
window.luminaResetPassword = async () => {
  const name = luminaField("reset-username"), password = luminaField("reset-password");
  const path = "/api/v1/admin/users/" + encodeURIComponent(name) + "/password";
  const body = {endSessions: luminaChecked("reset-end-sessions"),
                revokeKeys: luminaChecked("reset-revoke-keys")};
  if (password) body.password = password;
  const r = await luminaApi("POST", path, body);
  if (!r.ok) return r;
  luminaClear("reset-password");
  luminaKeep(r.data.temporaryPassword);
  return {ok: true, username: name, temporary: !!r.data.temporaryPassword,
          endSessions: body.endSessions, revokeKeys: body.revokeKeys};
};
"""


def secrets_script() -> rx.Component:
    return rx.script(SECRETS_SCRIPT)


def reveal_dialog(
    open_: rx.Var[bool], title: rx.Var[str], note: str, on_close: rx.EventHandler
) -> rx.Component:
    """Shows the secret the last request returned, once, with a copy button."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(title),
            rx.dialog.description(note, size="2", color="gray"),
            rx.hstack(
                rx.input(
                    id="revealed-secret",
                    read_only=True,
                    width="100%",
                    font_family="var(--code-font-family)",
                    on_mount=rx.call_script("luminaShowSecret()"),
                    custom_attrs={"data-testid": "revealed-secret"},
                ),
                rx.button(
                    rx.icon("copy", size=14),
                    "Copy",
                    id="copy-secret",
                    type="button",
                    variant="soft",
                    on_click=[rx.call_script("luminaCopySecret()"), rx.toast("Copied")],
                    custom_attrs={"data-testid": "copy-secret"},
                ),
                width="100%",
                margin_top="1em",
            ),
            rx.flex(
                rx.button(
                    "Done",
                    on_click=[rx.call_script("luminaForgetSecret()"), on_close],
                    custom_attrs={"data-testid": "close-secret"},
                ),
                justify="end",
                margin_top="1em",
            ),
        ),
        open=open_,
    )
