"""Time ``BM25Index.caught_up`` for the delete of one 100-chunk document, on a large SQLite
index's mapped BM25 index (issue 22: the delete's pass over every posting).

Opens the store (``bm25_build="wait"``: the saved derived files of the current generation are
mapped, or the index is built and saved), then calls ``caught_up`` ``--calls`` times for the
removal of the 100 chunks at position ``--at`` (nothing added) and prints the seconds of each
call as JSON. Nothing is written to the index. Run it once per tree, taking turns, with
``PYTHONPATH`` set to each tree's ``src``, on a file made by ``benchmarks/memory.py build``::

    PYTHONPATH=src python benchmarks/caught_up_delete.py --path /work/mem/memory-1000000.sqlite3
"""

from __future__ import annotations

import argparse
import json
import time

from citewise.store.sqlite import SQLiteStore


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--path", required=True)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--at", type=int, default=500_000, help="first removed chunk position")
    args = ap.parse_args()
    store = SQLiteStore(args.path, bm25_build="wait")
    store.sparse_search(["cell"], 5)  # the current generation's index, mapped or built
    index = store._bm25_kept.current(store.generation())
    if index is None:
        raise SystemExit(f"{args.path}: no BM25 index of the current generation")
    removed = index.rowids[args.at:args.at + 100].copy()
    seconds = []
    for _ in range(args.calls):
        t0 = time.perf_counter()
        index.caught_up(index.generation + 1, removed, [])
        seconds.append(time.perf_counter() - t0)
    print(json.dumps(seconds))


if __name__ == "__main__":
    main()
