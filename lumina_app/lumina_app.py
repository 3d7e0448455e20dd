"""The Reflex app: the chat UI plus the Lumina HTTP API on one server."""

import reflex as rx

from lumina_app.api import create_api
from lumina_app.api.guard import socket_origin_allowed
from lumina_app.api.mcp import mcp_lifespan
from lumina_app.lifespan import lumina_lifespan
from lumina_app.platform import reflex_cors, socketio
from lumina_app.ui.access import AccessGate
from lumina_app.ui.pages import HEAD, STYLESHEET, add_pages

# Reflex's top app keeps the one CORS layer (one Vary: Origin): lumina_app/platform/reflex_cors.py
api_transformer = reflex_cors.mount_inside(create_api())
app = rx.App(api_transformer=api_transformer, stylesheets=[STYLESHEET], head_components=HEAD)
app.register_lifespan_task(lumina_lifespan)
app.register_lifespan_task(mcp_lifespan)  # after: sessions end while the services are open
# The UI socket follows the REST rules: the same Origin rule at its handshake, and no event
# runs before the gate has resolved who the socket is.
socketio.check_origins(app, socket_origin_allowed)  # lumina_app/platform/socketio.py
app.add_middleware(AccessGate(), index=0)
add_pages(app)
