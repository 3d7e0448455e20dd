"""Pages of the browser UI: ``/`` goes to the first agent; ``/chat/<agent>[/<conversation>]``."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components.account import account_page
from lumina_app.ui.components.admin import admin_page
from lumina_app.ui.components.composer import COMPOSER_SCRIPT
from lumina_app.ui.components.connection import install_overlay
from lumina_app.ui.components.context import context_dialog
from lumina_app.ui.components.conversation import conversation_pane
from lumina_app.ui.components.edit_box import EDIT_SCRIPT
from lumina_app.ui.components.heartbeat import heartbeat
from lumina_app.ui.components.imports import import_page
from lumina_app.ui.components.keys import keys_page
from lumina_app.ui.components.login import AUTH_SCRIPT, login_page
from lumina_app.ui.components.memories import memories_page
from lumina_app.ui.components.not_found import not_found_page
from lumina_app.ui.components.sidebar import drawer, sidebar
from lumina_app.ui.components.sidebar_dialogs import delete_dialog, rename_dialog
from lumina_app.ui.routes import ACCOUNT, ADMIN, CHAT, HOME, IMPORT, KEYS, LOGIN, MEMORIES
from lumina_app.ui.state.account import AccountState
from lumina_app.ui.state.admin import AdminState
from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.state.health import HealthState
from lumina_app.ui.state.imports import ImportState
from lumina_app.ui.state.keys import KeysState
from lumina_app.ui.state.live import LiveState
from lumina_app.ui.state.login import LoginState
from lumina_app.ui.state.memories import MemoriesState
from lumina_app.ui.state.sidebar import SidebarState

STYLESHEET = "/lumina.css"
NOT_FOUND = "404"  # Reflex's route for unknown addresses
# Loaded in every page's head, so keys typed before the page is interactive are kept.
HEAD = [rx.el.script(src=COMPOSER_SCRIPT), rx.el.script(src=EDIT_SCRIPT)]
# Scrolling up to the "Load older messages" button loads the older page (infinite scroll);
# the button stays for keyboard users and browsers without IntersectionObserver.
LOAD_OLDER_ON_SCROLL = """
(() => {
  if (window.__luminaOlder || !("IntersectionObserver" in window)) return;
  window.__luminaOlder = true;
  const inView = (button) => {
    const list = document.getElementById("message-list");
    if (!list || !document.body.contains(button)) return false;
    const b = button.getBoundingClientRect(), l = list.getBoundingClientRect();
    return b.bottom > l.top && b.top < l.bottom;
  };
  // Keep pulling while the button stays in view (a short page, or scroll anchoring).
  const pull = (button) => {
    button.click();
    setTimeout(() => { if (inView(button)) pull(button); }, 500);
  };
  const seen = new IntersectionObserver((entries) => {
    for (const entry of entries) if (entry.isIntersecting) pull(entry.target);
  });
  const watch = () => {
    const button = document.getElementById("load-older");
    if (button && !button.dataset.watched) { button.dataset.watched = "1"; seen.observe(button); }
  };
  new MutationObserver(watch).observe(document.body, { childList: true, subtree: true });
  watch();
})();
"""
ON_LOAD = [ChatState.load, SidebarState.refresh, HealthState.check]


def chat_page() -> rx.Component:
    return rx.hstack(
        sidebar(),
        drawer(),
        conversation_pane(),
        rename_dialog(),
        delete_dialog(),
        context_dialog(),
        rx.script(LOAD_OLDER_ON_SCROLL),
        rx.script(AUTH_SCRIPT),
        heartbeat(),
        # Live notices, once the page is on screen in a browser (one follower per tab).
        rx.box(display="none", on_mount=LiveState.watch),
        spacing="0",
        width="100%",
        height="100dvh",
        overflow="hidden",
    )


def add_pages(app: rx.App) -> None:
    install_overlay(app)
    # The chat's title follows the open conversation (set by the composer's script).
    app.add_page(chat_page, route=HOME, title="Lumina", on_load=ON_LOAD)
    app.add_page(chat_page, route=CHAT, title="Lumina", on_load=ON_LOAD)
    app.add_page(not_found_page, route=NOT_FOUND, title="Not found · Lumina")
    app.add_page(login_page, route=LOGIN, title="Sign in · Lumina", on_load=LoginState.load)
    app.add_page(account_page, route=ACCOUNT, title="Account · Lumina", on_load=AccountState.load)
    app.add_page(keys_page, route=KEYS, title="API keys · Lumina", on_load=KeysState.load)
    app.add_page(admin_page, route=ADMIN, title="Lumina", on_load=AdminState.load)
    app.add_page(memories_page, route=MEMORIES, title="Memory · Lumina", on_load=MemoriesState.load)
    app.add_page(import_page, route=IMPORT, title="Import · Lumina", on_load=ImportState.load)
