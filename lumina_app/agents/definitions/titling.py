"""Asking an agent's model for a new conversation's title: the prompt (the agent's
``title.md``, or a built-in default), the one small request's marker, and cleaning the
reply into one short line. The background task that asks and stores is
``services/titles.py``; the offline demo model proposes without a request
(``providers.demo_title``)."""

from __future__ import annotations

import re

TITLE_FILE = "title.md"
DEFAULT_TITLE_PROMPT = (
    "You name conversations. Given the first question of a conversation and its answer, "
    "reply with a title of at most six words that says what the conversation is about, "
    "in the language of the question. Reply with the title only: no quotes, no "
    "punctuation at the end, no explanation."
)
# The request's marker: one header, so a proxy, a log or a test double tells a title
# request from a model turn without reading the prompt (which the agent may change).
PURPOSE_HEADER = "X-Lumina-Purpose"
PURPOSE = "title"
MAX_TITLE_CHARS = 80
MAX_TITLE_TOKENS = 40  # "one small request": a title is a few words
_QUOTES = "\"'`“”‘’«»„「」『』*_#"
_LABEL = re.compile(r"^(title|titre|titel|标题)\s*[:\uff1a]\s*", re.IGNORECASE)
_ENDS = ".!;:,\u3002\uff01\uff1b\uff1a\uff0c"  # and their CJK full-width forms


class TitleFailed(Exception):
    """The model gave no title (an error, a timeout, an empty or unusable reply)."""


def title_request(question: str, answer: str, prompt: str) -> list[dict[str, str]]:
    """What the model is asked: the prompt, then the question and the start of the answer
    (enough to say what it is about, bounded so the request stays small)."""
    return [
        {"role": "system", "content": prompt or DEFAULT_TITLE_PROMPT},
        {
            "role": "user",
            "content": f"Question:\n{question[:2000]}\n\nAnswer:\n{answer[:2000]}",
        },
    ]


def clean_title(reply: str | None) -> str | None:
    """One line of at most ``MAX_TITLE_CHARS``: the first non-empty line, without a
    "Title:" label, surrounding quotes or markup, or a full stop at the end; None when
    nothing is left."""
    line = next((s.strip() for s in (reply or "").splitlines() if s.strip()), "")
    line = _LABEL.sub("", line).strip().strip(_QUOTES).strip()
    words = line.split()
    while len(words) > 1 and words[0].startswith("/"):  # a /command is not a title
        words.pop(0)
    line = " ".join(words).rstrip(_ENDS).strip().strip(_QUOTES).strip()
    if len(line) > MAX_TITLE_CHARS:
        cut = line[: MAX_TITLE_CHARS - 1]
        line = (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(",.;: ") + "…"
    return line or None
