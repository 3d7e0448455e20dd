"""What a memray recording of the cache probe allocated and still held at its end,
grouped by where (Python and native frames, innermost first), biggest first.

    python bench/cache_probe/leaks.py FILE.memray.bin [--top 30] [--frames 8]

Over a steady window (caches full) that is what grows; a cache still filling or turning
over shows too, so read it beside the probe's sizes.
"""

from __future__ import annotations

import argparse
import collections

from memray import FileReader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--frames", type=int, default=8)
    args = parser.parse_args()
    reader = FileReader(args.file)
    size: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    for record in reader.get_leaked_allocation_records(merge_threads=True):
        try:
            frames = record.hybrid_stack_trace()[: args.frames]
        except AssertionError:  # memray cannot interleave this one's Python frames
            frames = record.native_stack_trace()[: args.frames]
        where = " <- ".join(f"{fn} ({path.rsplit('/', 1)[-1]}:{line})" for fn, path, line in frames)
        size[where] += record.size
        count[where] += record.n_allocations
    meta = reader.metadata
    print(f"{meta.start_time:%H:%M:%S} to {meta.end_time:%H:%M:%S}: "
          f"{sum(size.values()) / 1e6:.1f} MB allocated and still held")  # fmt: skip
    for where, held in size.most_common(args.top):
        print(f"\n{held / 1e3:9.1f} KB in {count[where]:,} allocations\n    {where}")


if __name__ == "__main__":
    main()
