"""Resident memory of the dense index at 1M chunks after a restart, by method (issue 22,
items 2 and 6): ``ivf_pq`` (4-bit codes, faiss) against ``ivf`` (int8 lists).

``build``: ``--chunks`` random unit 384-d vectors (seed 0; memory does not depend on their
values), one ``DenseIndex`` per method, each saved as a derived folder under ``--work``
(``citewise.store.derived_files``, as the SQLite store saves it). ``measure``: in this fresh
process, the folder of ``--method`` opened memory-mapped (``DenseIndex.from_arrays``), then
``--queries`` top-50 searches; prints the open time and ``VmRSS`` with its anonymous and
file-backed parts (``/proc/self/status``). Run ``measure`` once per method, one after the other.

Usage::

    python benchmarks/dense_rss.py build --work DIR [--chunks 1000000]
    python benchmarks/dense_rss.py measure --work DIR --method ivf_pq
    python benchmarks/dense_rss.py measure --work DIR --method ivf
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from citewise.store import derived_files  # noqa: E402
from citewise.store.dense_index import DenseIndex  # noqa: E402
from citewise.store.derived_files import Stamp  # noqa: E402

METHODS = ("ivf_pq", "ivf")


def memory() -> str:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile"):
            fields[name] = int(value.split()[0]) / 1e6  # kB -> GB
    return ", ".join(f"{k} {v:.2f} GB" for k, v in fields.items())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=["build", "measure"])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--method", choices=METHODS, default="ivf_pq")
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    n = args.chunks
    if args.step == "build":
        rng = np.random.default_rng(0)
        vectors = rng.standard_normal((n, 384), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for method in METHODS:
            index = DenseIndex.build(1, np.arange(n), vectors, ivf_method=method)
            derived_files.save(args.work / method, "dense", Stamp(method, 1, n, n - 1),
                               index.arrays())
            print(f"saved {method}: {index.nbytes / 1e9:.2f} GB of arrays")
        return
    t0 = time.perf_counter()
    found = derived_files.load(args.work / args.method, "dense",
                               Stamp(args.method, 1, n, n - 1))
    assert found is not None, "run the build step first"
    index = DenseIndex.from_arrays(1, found[0], ivf_method=args.method, complete=True)
    del found  # as the store does: only the index holds the maps
    opened = time.perf_counter() - t0
    queries = np.random.default_rng(3).standard_normal((args.queries, 384), dtype=np.float32)
    for q in queries / np.linalg.norm(queries, axis=1, keepdims=True):
        index.top(q, 50)
    print(f"{args.method} ({index.method.value}): opened in {opened:.2f} s; after "
          f"{args.queries} top-50 searches {memory()}")


if __name__ == "__main__":
    main()
