"""A LangGraph ``BaseStore`` backed by Lumina's long-term memories (``pip install
'lumina-client[langgraph]'``): a LangGraph agent's long-term memory is Lumina's, visible and
editable on the Memory page, and used by Lumina's own agents.

The mapping (also in clients/python/README.md):

* **Owner**: the API key's owner. Every item belongs to whoever the client authenticates
  as; the namespace never names an owner, and another owner's memories are never seen.
* **Namespace**: ``(agent, *path)``. The first label is a Lumina agent id (an agent that
  does not exist is a ``NotFoundError``); the rest is a path of your own.
* **Item**: one memory whose text is ``[lg:<path>/<key>] <value>``: the path and the key
  percent-encoded, the value as compact JSON, or just the text for a value that is exactly
  ``{"text": "..."}`` (so it reads as a sentence on the Memory page). Lumina caps a
  memory at 500 characters: a bigger value is a ``BadRequestError``. An edit on the Memory
  page that keeps the ``[lg:…]`` label keeps the item; one that removes it turns the item
  into a plain memory.
* **Plain memories** (learnt from conversations, added by hand or over MCP) are items
  too, read-only in spirit: namespace ``(agent,)``, key ``memory-<id>``, value
  ``{"text": ...}``.
* ``put(..., None)`` / ``delete`` forgets the memory. ``search`` with a ``query`` uses
  Lumina's ranking (best first; ``score`` is None: the REST API gives the order, not the
  score); ``filter`` compares top-level value fields for equality. TTLs and ``index``
  are not supported (ignored: Lumina indexes every memory).

Each operation lists the agent's memories (at most 500), so it suits the few hundred
facts a person has, not a document store.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import quote, unquote

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from lumina_client.client import Lumina
from lumina_client.models import Memory

LABEL = "[lg:"
LIMIT = 500


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def memory_text(namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> str:
    path = "/".join(quote(part, safe="") for part in (*namespace[1:], key))
    shown = value.get("text") if set(value) == {"text"} else None
    if isinstance(shown, str) and not shown.startswith("{"):
        body = shown
    else:
        body = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return f"{LABEL}{path}] {body}"


def item_of(memory: Memory) -> Item:
    """A memory as an item (a plain memory as ``memory-<id>`` of ``(agent,)``)."""
    namespace: tuple[str, ...] = (memory.agent_id,)
    key, value = f"memory-{memory.id}", {"text": memory.text}
    if memory.text.startswith(LABEL) and "] " in memory.text:
        label, body = memory.text[len(LABEL) :].split("] ", 1)
        *path, raw_key = [unquote(part) for part in label.split("/")]
        namespace, key = (memory.agent_id, *path), raw_key
        try:
            parsed = json.loads(body) if body.startswith("{") else {"text": body}
        except ValueError:
            parsed = {"text": body}
        value = parsed if isinstance(parsed, dict) else {"text": body}
    return Item(
        value=value,
        key=key,
        namespace=namespace,
        created_at=_when(memory.created_at),
        updated_at=_when(memory.updated_at),
    )


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)


class LuminaStore(BaseStore):
    """``LuminaStore(Lumina(base_url, api_key))``: see the module's docstring for how
    namespaces, keys and values map onto memories."""

    supports_ttl = False

    def __init__(self, client: Lumina) -> None:
        self.client = client

    # -- BaseStore ---------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # the sync client in a worker thread: one HTTP call at a time, off the event loop
        return await asyncio.to_thread(self.batch, list(ops))

    # -- the operations ----------------------------------------------------------------

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            found = self._find(op.namespace, op.key)
            return item_of(found) if found else None
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise ValueError(f"unknown operation {op!r}")

    def _memories(self, agent: str | None, query: str | None = None) -> list[Memory]:
        if query:
            return self.client.memories.search(query, agent=agent, limit=LIMIT)
        return self.client.memories.list(agent=agent, limit=LIMIT)

    def _find(self, namespace: tuple[str, ...], key: str) -> Memory | None:
        for memory in self._memories(namespace[0]):
            item = item_of(memory)
            if item.namespace == tuple(namespace) and item.key == key:
                return memory
        return None

    def _put(self, op: PutOp) -> None:
        found = self._find(op.namespace, op.key)
        if op.value is None:
            if found is not None:
                self.client.memories.delete(found.id)
            return
        text = memory_text(tuple(op.namespace), op.key, dict(op.value))
        if found is None:
            self.client.memories.add(text, agent=op.namespace[0])
        elif found.text != text:
            self.client.memories.update(found.id, text=text)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        agent = prefix[0] if prefix else None
        hits = []
        for memory in self._memories(agent, op.query):
            item = item_of(memory)
            if item.namespace[: len(prefix)] != prefix:
                continue
            if op.filter and any(item.value.get(k) != v for k, v in op.filter.items()):
                continue
            hits.append(
                SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at)
            )
        return hits[op.offset : op.offset + op.limit]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {item_of(m).namespace for m in self._memories(None)}
        if op.match_conditions:
            found = {ns for ns in found if all(_matches(c, ns) for c in op.match_conditions)}
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]
