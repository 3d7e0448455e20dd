"""Function tools a client runs itself (the Responses API's ``tools: [{type: function}]``):
offered to the model beside the agent's own tools for the runs started while
:func:`offered` is in effect. A step whose model calls one of them ends the run with the
call pending; the client sends its output with the next turn.

``answer_meta`` rides along the same way: what the client's request adds to the meta of
the run's answer rows (the Responses API's ``previousResponseId``); so do the question's
images (``input_image`` parts for a vision agent): the question's chat message carries them
as ``image_url`` parts for that run. Memory keeps the question's text only.

Carried in a context variable, which the run's generation task inherits from the request
that started it (as the log context is), so the run start keeps its signature."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_OFFERED: ContextVar[tuple[dict[str, Any], ...]] = ContextVar("client_tools", default=())
_META: ContextVar[dict[str, Any] | None] = ContextVar("client_answer_meta", default=None)
_IMAGES: ContextVar[tuple[dict[str, Any], ...]] = ContextVar("client_images", default=())


@contextmanager
def offered(
    specs: Sequence[dict[str, Any]],
    answer_meta: dict[str, Any] | None = None,
    images: Sequence[dict[str, Any]] = (),
) -> Iterator[None]:
    """Runs started inside offer ``specs`` (chat-completions ``tools`` entries), their
    answers carrying ``answer_meta``, their question ``images`` (chat ``image_url`` parts)."""
    token, meta = _OFFERED.set(tuple(specs)), _META.set(answer_meta)
    shown = _IMAGES.set(tuple(images))
    try:
        yield
    finally:
        _OFFERED.reset(token)
        _META.reset(meta)
        _IMAGES.reset(shown)


def answer_meta() -> dict[str, Any]:
    return dict(_META.get() or {})


def current(own: set[str] | frozenset[str]) -> tuple[list[dict[str, Any]], frozenset[str]]:
    """The client's specs and names for this run, those named like one of the agent's own
    tools (``own``) left out: the agent's tool is the one that runs."""
    specs = [spec for spec in _OFFERED.get() if spec["function"]["name"] not in own]
    return specs, frozenset(spec["function"]["name"] for spec in specs)


def with_images(question: dict[str, Any]) -> dict[str, Any]:
    """The question's chat message with this request's images after its text (as is
    without any)."""
    images = _IMAGES.get()
    if not images:
        return question
    content = question["content"]
    parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
    return {**question, "content": [*parts, *images]}
