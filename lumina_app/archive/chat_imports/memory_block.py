"""A pasted memory block — what ChatGPT ("Manage memories") or Claude show as what they
know about you — read as one fact per line: bullets and numbering stripped, blank lines
and headings skipped."""

from __future__ import annotations

import re

from lumina_app.archive.chat_imports.model import ImportFormatError, clean_text
from lumina_app.domain.memories import MAX_MEMORY_CHARS

MAX_FACTS = 2000
_BULLET = re.compile(r"^\s*(?:[-*•·–—▪◦+]|\d{1,3}[.)]|\[[ xX]?\])\s*")
_HEADING = re.compile(r"^\s*#{1,6}\s")


def parse(text: str) -> list[str]:
    """The facts in order, each once; a line over the memory size is refused (422)."""
    facts: list[str] = []
    seen: set[str] = set()
    for n, line in enumerate(clean_text(text).splitlines(), start=1):
        if _HEADING.match(line):
            continue
        fact = " ".join(_BULLET.sub("", line, count=1).split())
        if not fact or fact.casefold() in seen:
            continue
        if len(fact) > MAX_MEMORY_CHARS:
            raise ImportFormatError(
                f"line {n} is {len(fact)} characters: a memory holds at most {MAX_MEMORY_CHARS}"
            )
        seen.add(fact.casefold())
        facts.append(fact)
    if len(facts) > MAX_FACTS:
        raise ImportFormatError(f"{len(facts)} facts: at most {MAX_FACTS} in one block")
    if not facts:
        raise ImportFormatError("the memory block has no facts (one per line)")
    return facts
