"""What every chat-export parser produces: conversations on their active branch, in order,
with their times; plus the helpers the parsers share (times, text, tree walks)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from lumina_app.domain import InvalidInput, MsgRole

MAX_TITLE = 255


class ImportSource(StrEnum):
    CHATGPT = "chatgpt"
    CLAUDE = "claude"
    OPENWEBUI = "openwebui"
    LIBRECHAT = "librechat"
    MEMORIES = "memories"  # a pasted "what ChatGPT / Claude know about you" block

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    ImportSource.CHATGPT: "ChatGPT",
    ImportSource.CLAUDE: "Claude",
    ImportSource.OPENWEBUI: "Open WebUI",
    ImportSource.LIBRECHAT: "LibreChat",
    ImportSource.MEMORIES: "a memory block",
}


class ImportFormatError(InvalidInput):
    """The file is not the export it was said to be (422, nothing imported)."""


@dataclass(slots=True)
class ParsedMessage:
    role: MsgRole
    text: str
    created_at: datetime
    source_id: str  # the export's message id: makes the stored turn ids stable


@dataclass(slots=True)
class ParsedConversation:
    source_id: str  # the export's conversation id (the import fingerprint's half)
    title: str
    created_at: datetime
    updated_at: datetime
    messages: list[ParsedMessage] = field(default_factory=list)
    branches_skipped: int = 0  # other branches of the tree, left out
    left_out: int = 0  # system / tool / empty nodes on the branch, left out

    @property
    def last_time(self) -> datetime:
        """The latest kept message's time (before any, the conversation's start): what a
        message without a time of its own is given."""
        return self.messages[-1].created_at if self.messages else self.created_at

    def keep(self, message: ParsedMessage | None) -> None:
        """The branch's next message: kept, or (``None``) counted as left out."""
        if message is None:
            self.left_out += 1
        else:
            self.messages.append(message)


@dataclass(slots=True)
class ParsedExport:
    source: ImportSource
    conversations: list[ParsedConversation] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)  # a memory block's lines

    @property
    def messages(self) -> int:
        return sum(len(c.messages) for c in self.conversations)

    @property
    def branches_skipped(self) -> int:
        return sum(c.branches_skipped for c in self.conversations)

    def date_range(self) -> tuple[datetime | None, datetime | None]:
        times = [m.created_at for c in self.conversations for m in c.messages]
        times += [c.created_at for c in self.conversations]
        return (min(times), max(times)) if times else (None, None)


def fingerprint(source: ImportSource, source_id: str) -> str:
    """The import fingerprint of one conversation: the same export's conversation always
    maps to the same one."""
    return hashlib.sha256(f"{source.value}\0{source_id}".encode()).hexdigest()


def load_json(data: bytes, what: str) -> Any:
    try:
        return json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ImportFormatError(
            f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    except json.JSONDecodeError as exc:
        at_end = exc.pos >= len(exc.doc.rstrip()) - 1 or exc.msg.startswith("Unterminated")
        cut = " (the file looks truncated)" if at_end else ""
        raise ImportFormatError(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno}{cut}"
        ) from None
    except RecursionError:
        raise ImportFormatError(f"{what} is nested too deeply") from None


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise ImportFormatError(message)


def as_time(raw: object, where: str, *, fallback: datetime | None = None) -> datetime:
    """Epoch seconds (float or int; milliseconds when too large for seconds) or an ISO
    8601 string, as aware UTC."""
    if raw is None or raw == "":
        if fallback is not None:
            return fallback
        raise ImportFormatError(f"{where}: no time given")
    try:
        if isinstance(raw, bool):
            raise ValueError
        if isinstance(raw, int | float):
            seconds = raw / 1000 if raw > 1e11 else raw
            return datetime.fromtimestamp(seconds, UTC)
        if isinstance(raw, str):
            parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        pass
    raise ImportFormatError(f"{where}: {str(raw)[:40]!r} is not a time")


def clean_text(text: str) -> str:
    """NUL cannot be stored by every backend; everything else is kept as written."""
    return text.replace("\x00", "")


def title_of(raw: object, fallback: str = "Imported conversation") -> str:
    """Kept as plain text (HTML in it stays text: the UI escapes it), one line, capped."""
    text = " ".join(str(raw).split()) if isinstance(raw, str) else ""
    return clean_text(text)[:MAX_TITLE] or fallback


def described(part: Mapping[str, Any]) -> str:
    """A part that is not text (an image, a file, audio): a bracketed note in its place."""
    kind = str(part.get("content_type") or part.get("type") or "attachment")
    name = part.get("name") or part.get("file_name") or part.get("title")
    return f"[{kind}: {name}]" if name else f"[{kind}]"


def active_branch(
    nodes: Mapping[str, Any], leaf: str | None, parent_of: Callable[[Any], str | None]
) -> list[str]:
    """The ids from the root to ``leaf`` (walking parents, then reversed); a cycle or a
    missing parent is a format error."""
    path: list[str] = []
    seen: set[str] = set()
    node_id = leaf
    while node_id is not None and node_id in nodes:
        expect(node_id not in seen, f"the message tree loops at {node_id!r}")
        seen.add(node_id)
        path.append(node_id)
        node_id = parent_of(nodes[node_id])
    path.reverse()
    return path


def branch_count(children: Mapping[str, list]) -> int:
    """Branches besides the active one: every fork adds (children - 1)."""
    return sum(max(0, len(kids) - 1) for kids in children.values())
