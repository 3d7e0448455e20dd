"""The Reflex app: the chat UI plus the Lumina HTTP API on one server."""

import reflex as rx

from lumina_app.api import create_api
from lumina_app.lifespan import lumina_lifespan
from lumina_app.ui.pages import STYLESHEET, add_pages

app = rx.App(api_transformer=create_api(), stylesheets=[STYLESHEET])
app.register_lifespan_task(lumina_lifespan)
add_pages(app)
