"""What every ``python -m lumina_app`` command shares: the consoles, the settings (or the
one line saying which is bad), and opening the services around one piece of work."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import typer
from rich.console import Console

from lumina_app.composition import Services, open_services
from lumina_app.domain import LuminaError
from lumina_app.settings import Settings, SettingsError, load_settings

T = TypeVar("T")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def settings_or_exit() -> Settings:
    """The settings, or the one-line reason they are bad (exit 2)."""
    try:
        return load_settings()
    except SettingsError as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(2) from None


def run_with_services(
    work: Callable[[Services], Awaitable[T]], settings: Settings | None = None
) -> T:
    """Open services, run ``work``, close them; a Lumina error ends the command (exit 1)."""
    settings = settings or settings_or_exit()

    async def main() -> T:
        async with opened(settings) as services:
            return await work(services)

    try:
        return asyncio.run(main())
    except (LuminaError, OSError) as exc:  # unreachable database, unwritable --out, ...
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(1) from None


@asynccontextmanager
async def opened(settings: Settings) -> AsyncIterator[Services]:
    """Services without the start-up sweep (``sweep`` runs it on purpose)."""
    services = await open_services(settings, recover=False)
    try:
        yield services
    finally:
        await services.close()
