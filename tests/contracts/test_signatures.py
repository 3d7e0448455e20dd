"""The storage contracts the services type against are what the stores implement: every
method of the Protocol exists on each implementation with the same parameters (names,
kinds, defaults), and every attribute it declares (``shared``, ``name``) is there, so a
store and its contract cannot drift apart unnoticed. (What the methods do is the rest of
this package's suites, one per contract.)"""

from __future__ import annotations

import inspect

import pytest

from lumina_app.storage.cold_store import ColdStore
from lumina_app.storage.hot_window import HotWindow
from lumina_app.storage.live_bus import LiveBus
from lumina_app.storage.local.hot_window import LocalHotWindow
from lumina_app.storage.local.live_bus import LocalLiveBus
from lumina_app.storage.local.run_events import LocalRunEventLog
from lumina_app.storage.local.run_locks import LocalRunLocks
from lumina_app.storage.local.slots import LocalSlots
from lumina_app.storage.redis.hot_window import RedisHotWindow
from lumina_app.storage.redis.live_bus import RedisLiveBus
from lumina_app.storage.redis.run_events import RedisRunEventLog
from lumina_app.storage.redis.run_locks import RedisRunLocks
from lumina_app.storage.redis.slots import RedisSlots
from lumina_app.storage.run_events import RunEventLog
from lumina_app.storage.run_locks import RunLocks
from lumina_app.storage.slots import Slots
from lumina_app.storage.sql.cold_store import SQLColdStore

pytestmark = pytest.mark.unit


def mismatches(contract: type, store: type) -> list[str]:
    wrong = [
        f"{store.__name__} has no {name}"
        for name in getattr(contract, "__annotations__", {})
        if not hasattr(store, name)
    ]
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
    [
        (ColdStore, SQLColdStore),
        (HotWindow, RedisHotWindow),
        (HotWindow, LocalHotWindow),
        (RunLocks, LocalRunLocks),
        (RunLocks, RedisRunLocks),
        (RunEventLog, LocalRunEventLog),
        (RunEventLog, RedisRunEventLog),
        (Slots, LocalSlots),
        (Slots, RedisSlots),
        (LiveBus, LocalLiveBus),
        (LiveBus, RedisLiveBus),
    ],
)
def test_a_store_implements_its_contract(contract: type, store: type) -> None:
    assert mismatches(contract, store) == []


def test_the_check_sees_a_drift() -> None:
    class Drifted:
        async def last_question(self, conversation_pk: int, *, extra: bool = False) -> None: ...

    wrong = mismatches(ColdStore, Drifted)
    assert "Drifted has no ping" in wrong
    assert any(w.startswith("Drifted.last_question(") for w in wrong)
    assert "Drifted has no shared" in mismatches(Slots, Drifted)
