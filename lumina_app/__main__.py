"""``python -m lumina_app``: the maintenance CLI (see ``lumina_app.cli``)."""

from lumina_app.cli import main

main()
