"""The storage contracts the memory layer types against are what the stores implement:
every method of the Protocol exists on each store with the same parameters (names, kinds,
defaults), so a store and its contract cannot drift apart unnoticed."""

from __future__ import annotations

import inspect

import pytest

from lumina_app.storage.cold_store import ColdStore
from lumina_app.storage.hot_window import HotWindow
from lumina_app.storage.local.hot_window import LocalHotWindow
from lumina_app.storage.redis.hot_window import RedisHotWindow
from lumina_app.storage.sql.cold_store import SQLColdStore

pytestmark = pytest.mark.unit


def mismatches(contract: type, store: type) -> list[str]:
    wrong = []
    for name, member in vars(contract).items():
        if name.startswith("_") or not callable(member):
            continue
        found = getattr(store, name, None)
        if found is None:
            wrong.append(f"{store.__name__} has no {name}")
            continue
        want = [(p.name, p.kind, p.default) for p in inspect.signature(member).parameters.values()]
        got = [(p.name, p.kind, p.default) for p in inspect.signature(found).parameters.values()]
        if want != got:
            wrong.append(f"{store.__name__}.{name}{inspect.signature(found)}")
    return wrong


@pytest.mark.parametrize(
    ("contract", "store"),
    [(ColdStore, SQLColdStore), (HotWindow, RedisHotWindow), (HotWindow, LocalHotWindow)],
)
def test_a_store_implements_its_contract(contract: type, store: type) -> None:
    assert mismatches(contract, store) == []


def test_the_check_sees_a_drift() -> None:
    class Drifted:
        async def get_message(self, message_id: int, *, extra: bool = False) -> None: ...

    wrong = mismatches(ColdStore, Drifted)
    assert "Drifted has no ping" in wrong
    assert any(w.startswith("Drifted.get_message(") for w in wrong)
