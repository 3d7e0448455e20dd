"""The Reflex app: UI pages plus the Lumina HTTP API on one server."""

import reflex as rx

from lumina_app.api import create_api
from lumina_app.lifespan import lumina_lifespan
from lumina_app.ui.pages import index

app = rx.App(api_transformer=create_api())
app.register_lifespan_task(lumina_lifespan)
app.add_page(index, route="/", title="Lumina")
