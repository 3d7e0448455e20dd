"""What grew between two of the cache probe's tracemalloc snapshots, biggest first.

    python bench/cache_probe/compare.py OLD.snap NEW.snap [--top 25] [--by traceback|lineno]

Only allocations from lumina_app, its dependencies and the standard library are compared
(tracemalloc's own frames are left out); a traceback shows its frames innermost last.
"""

from __future__ import annotations

import argparse
import tracemalloc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--by", choices=["traceback", "lineno", "filename"], default="traceback")
    args = parser.parse_args()
    keep = [
        tracemalloc.Filter(False, tracemalloc.__file__),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
    ]
    old = tracemalloc.Snapshot.load(args.old).filter_traces(keep)
    new = tracemalloc.Snapshot.load(args.new).filter_traces(keep)
    diffs = new.compare_to(old, args.by)
    total = sum(d.size_diff for d in diffs)
    print(
        f"traced: {sum(s.size for s in new.statistics('filename')) / 1e6:.1f} MB, "
        f"grew {total / 1e6:+.2f} MB"
    )
    for diff in diffs[: args.top]:
        print(
            f"\n{diff.size_diff / 1e3:+9.1f} KB  {diff.count_diff:+7d} blocks "
            f"({diff.size / 1e3:.1f} KB, {diff.count} blocks now)"
        )
        for line in diff.traceback.format()[-2 * min(len(diff.traceback), 8) :]:
            print("    " + line)


if __name__ == "__main__":
    main()
