"""Reflex configuration. Lumina's own knobs are LUMINA_* in lumina_app.settings."""

import reflex as rx

from lumina_app import granian_limits

# The server `reflex run` builds gets Lumina's connection limits (docs/SECURITY.md).
granian_limits.install()

config = rx.Config(
    app_name="lumina_app",
    telemetry_enabled=False,
    show_built_with_reflex=False,
    plugins=[rx.plugins.RadixThemesPlugin(theme=rx.theme(accent_color="violet", radius="medium"))],
    disable_plugins=[rx.plugins.SitemapPlugin],
)
