"""What a context sends of the files its questions carry (docs/FILES.md, "To the model").

Every question in the context that carries files gets them, the newest question's first:
an image as an ``image_url`` data-URL part for an agent whose model takes images (at most
``LUMINA_MAX_IMAGES_PER_CONTEXT``, each at most ``LUMINA_MAX_CONTEXT_IMAGE_BYTES``),
``[image: name]`` in the text otherwise; a document's text (read once at upload,
``lumina_file_text``) as a block in the question's text, cut to the room the token budget
leaves with a visible marker; anything else ``[file: name]``.

:func:`plan` decides and reads; the run records its decisions (:class:`FileSent`, in the
run's recipe), and :func:`load` reads the same parts again from them, so the context
inspector renders exactly what was sent (``context.render`` is where they join the
messages).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from lumina_app.domain import Msg
from lumina_app.domain.tokens import IMAGE_TOKENS, estimate_text
from lumina_app.storage.files import FileText

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
IMAGE, PLACEHOLDER, TEXT = "image", "placeholder", "text"
_PIECE = 4096  # characters measured at a time while fitting a text to its room
# The blank line before each block, as the budget counts it: a whole token, so the sum of
# the parts' estimates bounds the estimate of the question they make.
_SEPARATOR = 1


class FileSource(Protocol):
    """Where a context reads files from (``storage.files.FileRecords``)."""

    def read(self, owner: str, file_id: str) -> AsyncIterator[bytes]: ...

    async def texts(self, owner: str, file_ids: Sequence[str]) -> dict[str, FileText]: ...


@dataclass(frozen=True, slots=True)
class FileSent:
    """What of one file of one question a context sent: ``sent`` is ``image``,
    ``placeholder`` or ``text`` (``chars`` of its ``of`` characters)."""

    turn: str
    id: str
    name: str
    type: str
    sent: str
    chars: int = 0
    of: int = 0

    def view(self) -> dict[str, Any]:
        """As the context inspector shows it."""
        return {k: v for k, v in asdict(self).items() if k != "turn"}


@dataclass(slots=True)
class Attached:
    """The files' parts, by the turn id of the question that carries them."""

    sent: list[FileSent] = field(default_factory=list)
    blocks: dict[str, list[str]] = field(default_factory=dict)  # text added to the question
    images: dict[str, list[str]] = field(default_factory=dict)  # data URLs after its text

    def content(self, turn: str, text: str) -> str | list[dict[str, Any]]:
        """A question's chat content: its text with its files' blocks, then its images."""
        blocks = self.blocks.get(turn)
        if blocks:
            text = "\n\n".join([text, *blocks]) if text else "\n\n".join(blocks)
        urls = self.images.get(turn)
        if not urls:
            return text
        parts = [{"type": "image_url", "image_url": {"url": url}} for url in urls]
        return [{"type": "text", "text": text}, *parts]

    def add(self, sent: FileSent, block: str = "", url: str = "") -> None:
        self.sent.append(sent)
        if url:
            self.images.setdefault(sent.turn, []).append(url)
        else:
            self.blocks.setdefault(sent.turn, []).append(block)


@dataclass(frozen=True, slots=True)
class Limits:
    """What a context may carry: images (none for a text-only model) and file text."""

    images: int
    image_bytes: int
    tokens: int


def carrying(history: Sequence[Msg], question: Msg) -> list[Msg]:
    """The questions with files, the newest (``question``) first."""
    asked = [m for m in history if m.files]
    return [*([question] if question.files else []), *reversed(asked)]


def reserve(questions: Sequence[Msg], limits: Limits) -> int:
    """A first guess of the tokens the files will take (for the history's trim): a text
    file's bytes as characters, an image its fixed cost."""
    guess, images = 0, limits.images
    for question in questions:
        for entry in question.files:
            if entry.get("type") in IMAGE_TYPES:
                guess += IMAGE_TOKENS if images > 0 else 8
                images -= 1
            else:
                guess += int(entry.get("size") or 0) // 4 + 16
    return guess


async def plan(
    source: FileSource, owner: str, questions: Sequence[Msg], limits: Limits
) -> Attached:
    """Decide and read what each file sends, the newest question's files first."""
    ids = [f["id"] for q in questions for f in q.files if f.get("type") not in IMAGE_TYPES]
    texts = await source.texts(owner, ids) if ids else {}
    attached, images = Attached(), limits.images
    # Every file is named at least: its placeholder's room is kept until it is decided.
    named = [_named(f) for q in questions for f in q.files]
    room = limits.tokens - sum(estimate_text(n) + _SEPARATOR for n in named)
    for question in questions:
        for entry in question.files:
            name, kind = str(entry.get("name", "")), str(entry.get("type", ""))
            base = FileSent(question.turn_id, str(entry.get("id", "")), name, kind, PLACEHOLDER)
            room += estimate_text(_named(entry)) + _SEPARATOR
            if kind not in IMAGE_TYPES:
                room -= _document(attached, base, texts.get(base.id), room)
                continue
            url = ""
            if images > 0 and int(entry.get("size") or 0) <= limits.image_bytes:
                url = await _data_url(source, owner, base)
            if url:
                images, room = images - 1, room - IMAGE_TOKENS
                attached.add(replace(base, sent=IMAGE), url=url)
            else:
                attached.add(base, block=f"[image: {name}]")
                room -= _SEPARATOR + estimate_text(f"[image: {name}]")
    return attached


def _named(entry: dict[str, Any]) -> str:
    """A file's placeholder: ``[image: name]`` or ``[file: name]``."""
    label = "image" if entry.get("type") in IMAGE_TYPES else "file"
    return f"[{label}: {entry.get('name', '')}]"


def _document(attached: Attached, base: FileSent, found: FileText | None, room: int) -> int:
    """A document's block, its text cut to ``room`` tokens (none left: its placeholder);
    the tokens it takes."""
    text = found.text if found is not None and found.status == "ok" else ""
    cut = fit(base.name, text, room - _SEPARATOR) if text else 0
    if not cut:
        block = f"[file: {base.name}]"
        attached.add(replace(base, of=len(text)), block=block)
    else:
        block = _block(base.name, text, cut)
        attached.add(replace(base, sent=TEXT, chars=cut, of=len(text)), block=block)
    return _SEPARATOR + estimate_text(block)


async def load(source: FileSource, owner: str, recorded: Sequence[dict[str, Any]]) -> Attached:
    """The parts a run sent, read again from what it recorded (a file deleted since: its
    placeholder)."""
    sent = [FileSent(**entry) for entry in recorded]
    ids = [s.id for s in sent if s.sent == TEXT]
    texts = await source.texts(owner, ids) if ids else {}
    attached = Attached()
    for one in sent:
        if one.sent == IMAGE:
            url = await _data_url(source, owner, one)
            attached.add(one, block="" if url else f"[image: {one.name}]", url=url)
        elif one.sent == TEXT and one.id in texts:
            attached.add(one, block=_block(one.name, texts[one.id].text, one.chars))
        else:
            attached.add(one, block=_named({"name": one.name, "type": one.type}))
    return attached


def fit(name: str, text: str, room: int) -> int:
    """How many of ``text``'s characters fit in ``room`` tokens as a block (0: none).

    Costs what is sent, not the whole text: the text is measured a piece at a time up to
    where the room ends (a 2,000,000-character file must not hold the event loop)."""
    whole = len(text)
    frame = estimate_text(_block(name, "", 0))
    marker = estimate_text(f"\n[… cut: {whole} of {whole} characters sent]")
    if room - frame <= 0:
        return 0
    sent, used = 0, 0
    while sent < whole:
        cost = estimate_text(text[sent : sent + _PIECE])
        if used + cost > room - frame:
            break
        sent, used = min(whole, sent + _PIECE), used + cost
    if sent >= whole:
        return whole
    limit = room - frame - marker  # cut: the marker must fit too
    while sent > 0 and used > limit:
        sent -= _PIECE
        used -= estimate_text(text[sent : sent + _PIECE])
    for char in text[sent : sent + _PIECE]:  # the last piece, a character at a time
        cost = 1 if char >= "\x80" else 0.25
        if used + cost > limit:
            break
        sent, used = sent + 1, used + cost
    while sent > 0 and estimate_text(_block(name, text, sent)) > room:
        sent -= 16  # the pieces' rounding, taken back
    return max(0, sent)


def _block(name: str, text: str, chars: int) -> str:
    body = text[:chars]
    if chars < len(text):
        body += f"\n[… cut: {chars} of {len(text)} characters sent]"
    return f"[file: {name}]\n{body}\n[end of file: {name}]"


async def _data_url(source: FileSource, owner: str, file: FileSent) -> str:
    """The image's bytes as a data URL ("" if the file is gone)."""
    data = b"".join([piece async for piece in source.read(owner, file.id)])
    return f"data:{file.type};base64,{base64.b64encode(data).decode()}" if data else ""
