"""Words as recall ranks them: lower-cased, English stopwords out, Snowball-stemmed."""

from __future__ import annotations

import re
import threading
from datetime import datetime
from functools import lru_cache

import Stemmer

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 32  # words marked in a snippet
# Terms a question is ranked by: all of a 2,000-character one (BM25 weighs each by its
# rarity, so a long preamble's common words cost little and its last line still counts).
RANKED_QUERY_TERMS = 400
# A common English stopword list (the words a question is made of, not what it is about).
_STOPWORD_TEXT = """a about above after again against all am an and any are aren't as at be
    because been
    before being below between both but by can could did do does doing don down during each
    few for from further had has have having he her here hers herself him himself his how i
    if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves s t d ll m o re ve y"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


_PER_THREAD = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    """This thread's stemmer: PyStemmer's are not safe to share between threads, and a long
    conversation's index is built on a worker thread while the loop stems queries."""
    stemmer = getattr(_PER_THREAD, "stemmer", None)
    if stemmer is None:
        stemmer = _PER_THREAD.stemmer = Stemmer.Stemmer("english")
    return stemmer


# Stems by word: a dict lookup is ~20x cheaper than the stemmer's call, and recall stems
# the same words over and over (ranking a thousand candidates stems ~50,000 words).
_STEMS: dict[str, str] = {}
_STEMS_KEPT = 100_000  # distinct words (a few MB); past that the table starts again


def _stem_words(found: list[str]) -> list[str]:
    """Each word's stem (safe from several threads: a table cleared meanwhile only costs
    a stemmer call)."""
    stems = _STEMS
    out = [stems.get(w) for w in found]
    missing = [w for w, s in zip(found, out, strict=True) if s is None]
    if not missing:
        return out  # type: ignore[return-value]  # every word was in the table
    new = dict(zip(missing, _stemmer().stemWords(missing), strict=True))
    if len(stems) > _STEMS_KEPT:
        stems.clear()
    stems.update(new)
    return [new[w] if s is None else s for w, s in zip(found, out, strict=True)]


def words(text: str) -> list[str]:
    """Every word, lower-cased, in order."""
    return _WORD.findall(text.lower())


def terms(text: str) -> list[str]:
    """The stemmed content words of ``text`` (stopwords dropped), in order, repeats kept."""
    return _stem_words([w for w in words(text) if w not in STOPWORDS])


def query_terms(text: str) -> list[str]:
    """A query's terms, each once; a query of stopwords only keeps them ("who is it")."""
    found = terms(text) or _stem_words(words(text))
    return list(dict.fromkeys(found))[:RANKED_QUERY_TERMS]


def keywords(text: str) -> list[str]:
    """A query's content words as typed (for marking them in snippets), each once."""
    return list(dict.fromkeys(w for w in words(text) if w not in STOPWORDS))[:MAX_QUERY_TERMS]


def date_terms(when: datetime) -> list[str]:
    """When a message was said, as words a question may use: ``8 may 2023``."""
    return list(_day_terms(when.year, when.month, when.day))


@lru_cache(maxsize=4096)
def _day_terms(year: int, month: int, day: int) -> tuple[str, str, str]:
    return str(day), datetime(year, month, day).strftime("%B").lower(), str(year)


def stem(word: str) -> str:
    return _stemmer().stemWord(word)
