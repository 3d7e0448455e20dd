"""Writing long-term memories after a run, off every run's path (like the rolling summary).

After a run of an agent with ``memory.longTerm`` ends, a background task asks what durable
facts the turn adds and applies the answer against what is already known: ``add`` (a fact
already known is not added twice), ``update`` or ``supersede`` (a newer statement about a
known fact: the old one is kept as its history, closed, and a new current memory holds the
new text; #42) or ``none``. The agent's own model is asked with its ``memory.md`` prompt;
the offline ``demo`` model extracts deterministically ("my name is …", "call me …", "I live
in …", "I prefer …", "I work on …", "my <thing> averages|ends|costs|… <value>").
A run never waits for it. A provider failure is logged and retried with backoff; a reply
that is not the JSON asked for changes nothing and is logged. At most
:data:`MAX_OPERATIONS` operations of a turn are applied (the rest dropped, with a warning);
a pinned memory or one the person added by hand is never replaced (#43); past the owner's
memory limit nothing more is added (a warning, once until there is room again).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.agents.providers.factory import Provider, ProviderFactory
from lumina_app.agents.run.run_driver import ActiveRun
from lumina_app.agents.tools.memories import scope_of
from lumina_app.domain import (
    InvalidInput,
    ProviderError,
    QuotaExceeded,
    StoreUnavailable,
    TextDelta,
)
from lumina_app.domain.memories import Memory, MemoryNotFound
from lumina_app.domain.tasks import keep
from lumina_app.memory.long_term import LongTermMemory, normalised
from lumina_app.memory.memory_rules import MemoryProtected

log = logging.getLogger(__name__)
TURN_CHARS = 4000  # what of a question and its answer the extractor reads
# Operations applied from one turn: a model (or a question written to make it) once asked
# for 130; one turn says a few things about a person, never this many.
MAX_OPERATIONS = 20


class ExtractionFailed(Exception):
    """The model could not be asked now; tried again later."""


class MalformedReply(Exception):
    """The model's reply is not the JSON asked for: nothing is changed."""


@dataclass(frozen=True, slots=True)
class Operation:
    op: str  # add | update | supersede | none
    text: str = ""
    id: int | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    agent: AgentDefinition
    owner: str
    conversation_uuid: str
    seq: int | None
    question: str
    answer: str


# -- the demo model's deterministic extraction ---------------------------------------------

_END = r"(?=\s+and\s|\s+but\s|[,;!?\n]|\.(?:\s|$)|$)"
_PATTERNS: list[tuple[str | None, re.Pattern[str], str]] = [
    ("name", re.compile(r"\bmy name is\s+(.{1,60}?)" + _END, re.I), "The user's name is {}"),
    ("name", re.compile(r"\bcall me\s+(.{1,60}?)" + _END, re.I), "The user's name is {}"),
    ("home", re.compile(r"\bI live in\s+(.{1,80}?)" + _END, re.I), "The user lives in {}"),
    (None, re.compile(r"\bI prefer\s+(.{1,120}?)" + _END, re.I), "The user prefers {}"),
    (None, re.compile(r"\bI work on\s+(.{1,120}?)" + _END, re.I), "The user works on {}"),
]
_SLOT_TEXT = {"name": "the user's name is ", "home": "the user lives in "}
# "My dashboard API averages 400 ms": a measure or date of one of the person's things. The
# same thing is the same words before the same verb ("the dashboard API now averages 250
# ms" replaces it); "the <thing>" counts only when the person's <thing> is already known.
_VERBS = r"averages|ends|starts|begins|costs|takes|weighs|lasts|holds"
_MEASURE = re.compile(
    r"\b(?P<det>my|the)\s+(?P<thing>[a-z][\w'’-]*(?:\s+[a-z][\w'’-]*){0,3}?)\s+"
    rf"(?:now\s+)?(?P<verb>{_VERBS})\s+(?P<value>.{{1,120}}?)" + _END,
    re.I,
)
_KNOWN_MEASURE = re.compile(rf"^the user's (?P<thing>.+?) (?P<verb>{_VERBS}) ", re.I)


def _thing(thing: str, verb: str) -> tuple[str, str]:
    return " ".join(thing.casefold().split()), verb.casefold()


def _value(raw: str) -> str:
    value = " ".join(raw.split()).strip(" \"'“”")
    return value + "." if re.search(r"\b[A-Z]$", value) else value  # "Ada L." keeps its stop


def _sentence(template: str, raw: str) -> str:
    value = _value(raw)
    return template.format(value) + ("" if value.endswith(".") else ".")


def _measure_of(memory: Memory) -> tuple[str, str] | None:
    found = _KNOWN_MEASURE.match(memory.text)
    return _thing(found["thing"], found["verb"]) if found else None


def demo_says_something(question: str) -> bool:
    """Whether a question holds any phrase the demo model reads (before reading memories)."""
    return any(p.search(question) for _slot, p, _t in _PATTERNS) or bool(_MEASURE.search(question))


def demo_operations(known: Sequence[Memory], question: str) -> list[Operation]:
    """What the demo model makes of a question: a name, a home or a measure of the same
    thing replaces the one known."""
    found: list[tuple[str, Memory | None]] = []  # (the fact, the memory it replaces)
    for slot, pattern, template in _PATTERNS:
        for match in pattern.finditer(question):
            text = _sentence(template, match.group(1))
            prefix = _SLOT_TEXT.get(slot or "")
            old = next((m for m in known if prefix and m.text.casefold().startswith(prefix)), None)
            found.append((text, old))
    for match in _MEASURE.finditer(question):
        thing = _thing(match["thing"], match["verb"])
        old = next((m for m in known if _measure_of(m) == thing), None)
        if old is None and match["det"].casefold() != "my":
            continue  # "the <thing>": not known to be the person's
        found.append((_sentence(f"The user's {match['thing']} {match['verb']} {{}}",
                                match["value"]), old))  # fmt: skip
    ops: list[Operation] = []
    for text, old in found:
        same = next((m for m in known if normalised(m.text) == normalised(text)), None)
        if same is not None or any(normalised(o.text) == normalised(text) for o in ops):
            continue
        ops.append(Operation("supersede", text, old.id) if old else Operation("add", text))
    return ops


# -- the agent's own model -----------------------------------------------------------------


def _request(prompt: str, known: Sequence[Memory], turn: Turn) -> list[dict[str, str]]:
    listed = "\n".join(f"[{m.id}] {m.text}" for m in known) or "(none yet)"
    exchange = f"USER: {turn.question[:TURN_CHARS]}\nASSISTANT: {turn.answer[:TURN_CHARS]}"
    return [
        {"role": "system", "content": prompt},
        {"role": "user", "content": f"Known memories:\n{listed}\n\nNewest exchange:\n{exchange}"},
    ]


def parse_operations(reply: str) -> list[Operation]:
    """The operations of a reply ``{"operations": [...]}`` (a bare list, or one fenced in
    a code block, is accepted too); MalformedReply for anything else."""
    body = reply.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.S)
    if fenced:
        body = fenced.group(1)
    try:
        data: Any = json.loads(body)
    except ValueError as exc:
        raise MalformedReply(f"not JSON: {exc}") from None
    items = data.get("operations") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise MalformedReply("no 'operations' list")
    ops = []
    for item in items:
        if not isinstance(item, dict) or item.get("op") not in (
            "add",
            "update",
            "supersede",
            "none",
        ):
            raise MalformedReply(f"not an operation: {str(item)[:80]}")
        text, raw_id = item.get("text", ""), item.get("id")
        if item["op"] != "none" and (not isinstance(text, str) or not text.strip()):
            raise MalformedReply(f"{item['op']} without text")
        if item["op"] in ("update", "supersede") and (
            not isinstance(raw_id, int) or isinstance(raw_id, bool)
        ):
            raise MalformedReply(f"{item['op']} without a memory id")
        ops.append(Operation(item["op"], text if isinstance(text, str) else "", raw_id))
    return ops


async def model_operations(
    provider: Provider, prompt: str, known: Sequence[Memory], turn: Turn
) -> list[Operation]:
    parts: list[str] = []
    async for event in provider.stream(_request(prompt, known, turn)):
        if isinstance(event, TextDelta):
            parts.append(event.text)
        elif isinstance(event, ProviderError):
            raise ExtractionFailed(event.message)
    return parse_operations("".join(parts))


# -- the keeper ----------------------------------------------------------------------------

Applied = Callable[[str, str, int], None]  # (agent id, operation, how many)


@dataclass(eq=False, repr=False)
class MemoryExtractor:
    store: LongTermMemory
    providers: ProviderFactory
    _: KW_ONLY
    retry_after: float = 30.0
    attempts: int = 3
    failures: int = field(default=0, init=False)
    on_applied: list[Applied] = field(default_factory=list, init=False)
    on_failed: list[Callable[[str], None]] = field(default_factory=list, init=False)
    _tasks: set[asyncio.Task] = field(default_factory=set, init=False)
    _owners: dict[str, asyncio.Lock] = field(default_factory=dict, init=False)
    # owners at their memory limit, warned about once
    _full: set[str] = field(default_factory=set, init=False)

    def after_run(self, run: ActiveRun, _last_seq: int | None = None) -> None:
        """A run ended (the engine's ``on_run_ended``): extract what its turn says about the
        person, later (never from a temporary conversation)."""
        if run.agent.memory.long_term is None or run.conversation.temporary:
            return
        if not run.user.content.strip():
            return
        answer = run.result.content if run.result is not None else ""
        turn = Turn(
            run.agent, run.owner, run.conversation.uuid, run.user.seq, run.user.content, answer
        )
        self.after_turn(turn)

    def after_turn(self, turn: Turn) -> None:
        """A turn stored without a run (an exchange logged over MCP): extracted the same way,
        later. The caller has checked the agent keeps long-term memory and the conversation
        is not temporary."""
        keep(self._tasks, self._extract(turn), "memory-extract")

    async def wait(self) -> None:
        """Until every extraction running now is done (tests, shutdown)."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _extract(self, turn: Turn) -> None:
        for attempt in range(1, self.attempts + 1):
            try:
                await self.extract(turn)
                return
            except MalformedReply as exc:
                self._failed(turn, f"the model's reply was not usable: {exc}")
                return
            except (ExtractionFailed, StoreUnavailable) as exc:
                self._failed(turn, f"attempt {attempt}: {exc}")
            if attempt < self.attempts:
                await asyncio.sleep(self.retry_after * attempt)

    def _failed(self, turn: Turn, why: str) -> None:
        self.failures += 1
        log.warning("memories of %s not extracted: %s", turn.conversation_uuid, why)
        for hook in self.on_failed:
            hook(turn.agent.id)

    async def extract(self, turn: Turn) -> list[Operation]:
        """Ask, then apply; one owner's turns one at a time (no duplicate from a race)."""
        lock = self._owners.setdefault(turn.owner, asyncio.Lock())
        async with lock:
            provider = self.providers.for_agent(turn.agent)
            if provider.name == "demo" and not demo_says_something(turn.question):
                return []  # no fact in it, whatever is known: nothing to read
            scope = scope_of(turn.agent)
            known = await self.store.listing(turn.owner, agent_id=scope, limit=200)
            if provider.name == "demo":
                ops = demo_operations(known, turn.question)
            else:
                ops = await model_operations(provider, turn.agent.memory.memory_prompt, known, turn)
            return await self._apply(turn, scope, known, ops)

    async def _apply(
        self, turn: Turn, scope: str | None, known: Sequence[Memory], ops: Sequence[Operation]
    ) -> list[Operation]:
        ids = {m.id: m for m in known}
        applied: list[Operation] = []
        ops = [op for op in ops if op.op != "none"]
        if len(ops) > MAX_OPERATIONS:
            log.warning(
                "memories of %s: %d operations from one turn, the first %d applied",
                turn.conversation_uuid, len(ops), MAX_OPERATIONS,
            )  # fmt: skip
            ops = ops[:MAX_OPERATIONS]
        for op in ops:
            try:
                if op.op == "add":
                    _memory, new = await self.store.add(
                        turn.owner,
                        turn.agent.id,
                        op.text,
                        scope_agent=scope,
                        conversation_uuid=turn.conversation_uuid,
                        seq=turn.seq,
                    )
                    if not new:
                        continue
                elif op.op in ("update", "supersede") and op.id in ids:
                    # a newer statement about a known fact: the old one becomes its history
                    newer = await self.store.supersede(
                        turn.owner,
                        op.id,
                        op.text,
                        agent_id=turn.agent.id,
                        conversation_uuid=turn.conversation_uuid,
                        seq=turn.seq,
                        by_agent=True,
                    )
                    if newer.id == op.id:
                        continue  # the same text again: nothing changed
                    ids.pop(op.id, None)
                else:
                    continue  # an id that is not among the known ones
            except (InvalidInput, MemoryNotFound, MemoryProtected) as exc:
                log.info("memory operation %s skipped: %s", op.op, exc)
                continue
            except QuotaExceeded as exc:
                if turn.owner not in self._full:
                    self._full.add(turn.owner)
                    log.warning("memories of %s: nothing more kept: %s", turn.owner, exc)
                break
            self._full.discard(turn.owner)
            applied.append(op)
            for hook in self.on_applied:
                hook(turn.agent.id, op.op, 1)
        return applied
