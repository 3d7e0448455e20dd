"""How large a share of PostgreSQL's messages a search matches, from the statistics
ANALYZE keeps on the stored ``search_vector`` (its most common words and their shares).

The search reads the newest matches only; for a word in most messages, reading the id
index backwards finds them at once, while for a word in 1 % of them it reads 100 rows per
match — there the GIN index is faster. The planner prices both from these same figures
but takes the backward read for words far rarer than it pays off (a word in 0.6 % of a
million messages: 350 ms backwards, a few ms through the index), so search.py chooses
from this estimate.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

_STATISTICS = sa.text(
    "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
    "WHERE schemaname = current_schema() AND tablename = 'lumina_message' "
    "AND attname = 'search_vector'"
)


# The statistics change only with an ANALYZE: read them again after this many seconds.
_KEPT_S = 300.0
_kept: dict[tuple[int, str], tuple[float, dict[str, float], float]] = {}


async def share(conn: AsyncConnection, words: Sequence[str], prefix: bool) -> float | None:
    """The estimated share of messages holding every word (the last as a prefix if
    ``prefix``), taking the words as independent; None before the first ANALYZE."""
    statistics = await _statistics(conn)
    if statistics is None:
        return None
    common, below = statistics
    estimate = 1.0
    for i, word in enumerate(words):
        word = word.lower()
        if prefix and i == len(words) - 1:
            found = sum(f for e, f in common.items() if e.startswith(word))
        else:
            found = common.get(word, 0.0)
        estimate *= min(1.0, found or below)
    return estimate


async def _statistics(conn: AsyncConnection) -> tuple[dict[str, float], float] | None:
    """(share of each most common word, half the least tracked share), kept a while per
    engine and schema."""
    key = (id(conn.engine.sync_engine), str(conn.engine.url))
    now = time.monotonic()
    kept = _kept.get(key)
    if kept and kept[0] > now:
        return kept[1], kept[2]
    row = (await conn.execute(_STATISTICS)).first()
    if row is None or not row[0]:
        return None
    elems, freqs = row[0], row[1]
    below = freqs[len(elems)] / 2 if len(freqs) > len(elems) else 0.0  # under the least tracked
    common = dict(zip(elems, freqs, strict=False))
    _kept[key] = (now + _KEPT_S, common, below)
    return common, below
