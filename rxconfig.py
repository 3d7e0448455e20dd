"""Reflex configuration. Lumina's own knobs are LUMINA_* in lumina_app.settings; this file
only passes on the two Reflex needs: where to listen, and which other origins may call."""

import reflex as rx

from lumina_app.observability import multiproc
from lumina_app.platform import granian as granian_patch
from lumina_app.settings import get_settings

# The server `reflex run` builds gets Lumina's connection limits (docs/SECURITY.md): the one
# hook that runs before Reflex builds it, hence the one import here besides the settings.
granian_patch.install()
# Metrics from every worker process in one /metrics: their shared directory, chosen here in
# the supervising process before prometheus-client is imported anywhere (workers inherit it).
multiproc.prepare()
_settings = get_settings()

config = rx.Config(
    app_name="lumina_app",
    telemetry_enabled=False,
    show_built_with_reflex=False,
    plugins=[rx.plugins.RadixThemesPlugin(theme=rx.theme(accent_color="violet", radius="medium"))],
    disable_plugins=[rx.plugins.SitemapPlugin],
    # 127.0.0.1 unless LUMINA_HOST says otherwise (Reflex's own default is every interface).
    backend_host=_settings.host,
    # No other origin by default: the UI is served from the app's own (docs/SECURITY.md).
    cors_allowed_origins=_settings.allowed_origin_list,
)
