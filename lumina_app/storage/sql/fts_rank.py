"""BM25 as SQLite's FTS5 ``bm25()`` computes it, for a bounded set of candidate rows, with
word weights from counts that stop early.

``bm25()`` weighs each query word by how many rows of the whole index hold it, and counts
them every time: ~100 ms for a word in most of a million messages. Here a word's count is
read newest first up to :data:`COUNTED` rows and, past that, extrapolated from how many
row ids those spanned. A count within the cap gives the very weight ``bm25()`` gives; a
larger one moves the weight little (it is ~0 for a word in half the rows: FTS5 clamps it to
1e-6 there). The text is split into words as FTS5's ``unicode61 remove_diacritics 2``
tokenizer splits it (runs of letters and digits, case and accents folded).
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import sqlalchemy as sa

COUNTED = 5_000  # rows of the index read, at most, to weigh one query word
_K1, _B = 1.2, 0.75  # FTS5's bm25() defaults
_TOKEN = re.compile(r"[^\W_]+")

# Rows holding a word, newest first, at most :cap. One statement a word: in a UNION ALL,
# FTS5 no longer reads newest first and stops, it sorts every match.
_COUNT = sa.text(
    "SELECT count(*), min(rowid), max(rowid) FROM (SELECT rowid "
    "FROM lumina_message_fts WHERE lumina_message_fts MATCH :phrase "
    "ORDER BY rowid DESC LIMIT :cap)"
)
# The index's averages record: rows indexed, their total length.
_AVERAGES = sa.text("SELECT block FROM lumina_message_fts_data WHERE id = 1")
# A count past COUNTED is an extrapolation whose weight barely moves as rows come (it is ~0
# past half the rows), so it is kept this long per database and phrase instead of being
# read again by every search: 2.5 ms for a one-letter prefix (37 lists of 5,000 entries).
# At most _KEPT_PHRASES are kept (then the lot is dropped). A count within the cap is read
# every time: it decides whether bm25() itself ranks (search._sqlite_ranked).
KEPT_S, _KEPT_PHRASES = 60.0, 4096
_kept: dict[tuple[str, str], tuple[float, tuple[int, int, int]]] = {}


@dataclass(frozen=True)
class Word:
    """A query word as FTS5 sees it: folded, and whether it is matched as a prefix."""

    text: str
    prefix: bool

    def phrase(self) -> str:
        return prefix_phrase(self.text) if self.prefix else '"' + self.text.replace('"', '""') + '"'

    @property
    def lists(self) -> int:
        """How many of the index's lists its phrase reads (37 for one character)."""
        return self.phrase().count(" OR ") + 1

    @cached_property
    def needle(self) -> str:
        """The word in a row's :func:`spaced` words: at a word's start, and at a word's end
        unless a prefix."""
        return " " + self.text + ("" if self.prefix else " ")

    @cached_property
    def _parts(self) -> re.Pattern[str] | None:
        """A word of several parts (``e-mail``: ``e mail``), their words in a row, however
        many spaces apart; None for a word of one part."""
        parts = self.text.split(" ")
        if len(parts) == 1:
            return None
        end = "" if self.prefix else "(?= )"
        return re.compile("(?<= )" + " +".join(map(re.escape, parts)) + end)

    def count(self, row: str) -> int:
        """How many times the word is in ``row`` (:func:`spaced`)."""
        if self._parts is None:
            return row.count(self.needle)
        return len(self._parts.findall(row))

    def found_in(self, row: str) -> bool:
        """Whether the word is in ``row`` (:func:`spaced`)."""
        if self._parts is None:
            return self.needle in row
        return self._parts.search(row) is not None


@dataclass(frozen=True)
class Weights:
    """What bm25() needs beyond a row: rows indexed, their mean length, each word's weight."""

    rows: int
    mean_length: float
    idf: tuple[float, ...]
    counts: tuple[int, ...]  # rows holding each word (extrapolated past COUNTED)
    exact: bool  # every word counted to its end: bm25() would weigh them the same


# FTS5 keeps prefix indexes of 2 and 3 characters (migration 0014) but none of 1: a prefix
# of one character would merge the row lists of every word starting with it before the
# first row (~250 ms for "a" at a million messages). Such a prefix is asked as the word
# itself or any 2-character prefix of it and an ASCII letter or digit, which the index
# reads newest first like a word; a word whose second character is another letter
# (``aß``) is not found by its first alone.
_SECOND = "0123456789abcdefghijklmnopqrstuvwxyz"


def prefix_phrase(text: str) -> str:
    """The FTS5 query for the word ``text`` as a prefix."""
    one = fold(text)
    if len(one) != 1 or not (one.isascii() and one.isalnum()):
        return '"' + text.replace('"', '""') + '"*'
    return "(" + " OR ".join([f'"{one}"', *(f'"{one}{c}"*' for c in _SECOND)]) + ")"


def fold(text: str) -> str:
    """``text`` with case and accents folded as the index folds them."""
    if not text.isascii():
        decomposed = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in decomposed if not unicodedata.combining(c))
    return text.lower()


def words_of(text: str) -> list[str]:
    """The words of ``text`` as the index holds them."""
    folded = fold(text)
    if folded.isascii():  # the same split, at C speed
        return folded.encode().translate(_ASCII_SEPARATORS).decode().split()
    return _TOKEN.findall(folded)


def spaced(texts: Sequence[str]) -> list[str]:
    """The words of each text as the index holds them, each between spaces, at least two
    spaces apart (so that counting a word never skips the next one). ASCII texts are folded
    and split all at once, with no step per text (a third of the time it took splitting
    and joining each text's words)."""
    joined = "\0".join(texts)
    if not (joined.isascii() and joined.count("\0") == len(texts) - 1):
        return [" " + "  ".join(words_of(text)) + " " for text in texts]
    folded = joined.lower().encode().translate(_ROWS_APART).replace(b" ", b"  ")
    return (b" " + folded.replace(b"\0", b" \0 ") + b" ").decode().split("\0")


_ASCII_SEPARATORS = bytes(i if chr(i).isalnum() else 32 for i in range(128)) + bytes(128)
_ROWS_APART = b"\0" + _ASCII_SEPARATORS[1:]  # the same, but NUL (between texts) kept


def weights(conn: sa.Connection, words: Sequence[Word]) -> Weights:
    """The index's row count and mean length (its averages record), and each word's
    bm25() weight from a count of at most :data:`COUNTED` rows."""
    found_rows = [_counted(conn, word.phrase()) for word in words]
    block = conn.execute(_AVERAGES).scalar() if found_rows else None
    rows, at = _varint(block, 0) if block else (0, 0)
    tokens, _ = _varint(block, at) if block else (0, 0)
    idf, counts, exact = [], [], True
    for found, low, high in found_rows:
        if found > COUNTED:  # extrapolated: the share of row ids those spanned
            exact = False
            found = min(rows, round(found * rows / max(1, high - low + 1)))
        value = math.log((rows - found + 0.5) / (found + 0.5)) if rows else 0.0
        idf.append(value if value > 0 else 1e-6)
        counts.append(found)
    return Weights(rows, tokens / rows if rows else 0.0, tuple(idf), tuple(counts), exact)


def _counted(conn: sa.Connection, phrase: str) -> tuple[int, int, int]:
    """(rows counted up to COUNTED + 1, their lowest and highest row id); one past the cap
    read at most every KEPT_S seconds."""
    key, now = (str(conn.engine.url), phrase), time.monotonic()
    kept = _kept.get(key)
    if kept is not None and now - kept[0] < KEPT_S:
        return kept[1]
    found, low, high = conn.execute(_COUNT, {"phrase": phrase, "cap": COUNTED + 1}).one()
    if found > COUNTED:
        if len(_kept) >= _KEPT_PHRASES:
            _kept.clear()
        _kept[key] = (now, (found, low, high))
    return found, low, high


def scores(rows: Sequence[str], words: Sequence[Word], w: Weights) -> list[float]:
    """bm25() of each row (:func:`spaced`), negated (higher is better), as the ranked
    query's ``score``."""
    weighed = list(zip(words, w.idf, strict=True))
    out = []
    for row in rows:
        length = len(row.split())
        norm = 1 - _B + _B * length / w.mean_length if w.mean_length else 1.0
        total = 0.0
        for word, idf in weighed:
            f = word.count(row)
            total += idf * f * (_K1 + 1) / (f + _K1 * norm)
        out.append(total)
    return out


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint (FTS5's record format): (value, next offset)."""
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9
