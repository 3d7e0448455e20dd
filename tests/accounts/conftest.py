"""Account tests: services opened on each SQL backend (``database``), users made quickly."""

from __future__ import annotations

import pytest

from lumina_app.composition import Services, open_services
from lumina_app.domain import OPERATOR, Credentials, Principal, Role, User, Via

PASSWORD = "correct horse battery"


@pytest.fixture
async def open_on(database, settings_factory):
    """``await open_on(**settings)``: services on this test's backend; closed afterwards."""
    opened: list[Services] = []

    async def make(**overrides) -> Services:
        services = await open_services(settings_factory(database_url=database.url, **overrides))
        opened.append(services)
        return services

    yield make
    for services in opened:
        await services.close()


@pytest.fixture
async def accounts(open_on) -> Services:
    return await open_on()


async def add_user(
    services: Services, name: str, role: Role = Role.MEMBER, password: str = PASSWORD
) -> User:
    """An account made by the operator (as ``users add`` does)."""
    return (await services.users.create(OPERATOR, name, role=role, password=password)).user


def browser(address: str = "127.0.0.1", **kwargs) -> Credentials:
    return Credentials(client_host=address, user_agent="pytest-browser", **kwargs)


def as_user(user: User, session_id: int | None = None) -> Principal:
    """The principal a user's own signed-in browser would be."""
    return Principal(
        owner=user.username,
        via=Via.SESSION,
        name=user.username,
        user_id=user.id,
        role=user.role.value,
        session_id=session_id,
        address="127.0.0.1",
    )
