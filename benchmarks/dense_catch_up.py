"""The SQLite store's dense index after a write: caught up from the chunk log vs rebuilt from
every row (issue 22), in one run, on the same file.

Data: N random 384-d unit vectors drawn around 2,000 centres (so that nearest neighbours mean
something; noise 0.6 of a centre's norm), 100 chunks a document, one short BM25 term a chunk;
the first N - 100 chunks are written once into ``<work>/dense-catch-up-N.sqlite3`` (reused
when it holds that many). Queries: ``--queries`` stored vectors plus noise (0.3).

Measured, for a write of one 100-chunk document by a second store object (as another process
would), then that document deleted again (the file ends as it began):

* ``caught up``: the store object that kept the index of the generation before the write
  answers its first dense top-50 search (the kept index less the changed chunks, plus their
  vectors read from SQLite and scored exactly);
* ``rebuilt``: a new store object with ``dense_catch_up = False`` and no saved files answers
  its first search: every vector read back and the index built (k-means and PQ codes from
  200,000 chunks), what every first search after a write cost before;
* then ``--queries`` top-50 searches on each (p50 / p95 ms, interleaved), recall@10 of both
  against exact search over the new state, and whether they found the same top 10.

Usage::

    python benchmarks/dense_catch_up.py --chunks 300000 [--queries 100] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from citewise.store.dense_index import exact_top  # noqa: E402
from citewise.store.sqlite import SQLiteStore  # noqa: E402
from citewise.types import Chunk, Document  # noqa: E402

DIM, PER_DOC, K = 384, 100, 50


def note(what: str) -> None:
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"# {what} ({time.strftime('%H:%M:%S')}, load {load})", flush=True)


def vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(2_000, DIM)).astype(np.float32)
    v = centres[rng.integers(0, 2_000, n)]
    v += 0.6 * np.sqrt(1 / DIM) * np.linalg.norm(centres[0]) * rng.normal(
        size=(n, DIM)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def put(store: SQLiteStore, d: int, vecs: np.ndarray) -> None:
    doc = Document(id=f"doc{d}", path=f"synthetic/doc{d}.txt", source_path=f"synthetic:{d}",
                   title=f"doc{d}", format="text", content_hash=str(d))
    chunks = [Chunk(id=f"c{d + i}", document_id=doc.id, ordinal=i, text=f"t{d + i}",
                    source_text=f"t{d + i}", char_start=0, char_end=4, content_hash=f"h{d + i}")
              for i in range(vecs.shape[0])]
    store.upsert_document(doc, chunks, vecs, [f"t{d + i}" for i in range(vecs.shape[0])])


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=300_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--work", type=Path, default=Path("/tmp/citewise-bench"))
    args = ap.parse_args()
    n = args.chunks
    vecs = vectors(n)
    path = args.work / f"dense-catch-up-{n}.sqlite3"
    args.work.mkdir(parents=True, exist_ok=True)
    note("start")
    store = SQLiteStore(path, derived_files_from=None)
    store.bind_model("synthetic", DIM)
    have = int(store.db.execute("SELECT count(*) FROM chunks").fetchone()[0])
    if have != n - PER_DOC:
        store.clear()
        store.bind_model("synthetic", DIM)
        for d in range(0, n - PER_DOC, PER_DOC):
            put(store, d, vecs[d:d + PER_DOC])
        note(f"wrote {n - PER_DOC:,} chunks")
    rng = np.random.default_rng(1)
    picks = rng.choice(n, args.queries, replace=False)
    queries = vecs[picks] + 0.3 * np.sqrt(1 / DIM) * rng.normal(
        size=(args.queries, DIM)).astype(np.float32)
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    t0 = time.perf_counter()
    store.dense_search(queries[0], K)
    note(f"first index built in {time.perf_counter() - t0:.1f} s "
         f"(method {store._load_matrix().method.value})")
    rows: dict[str, dict[str, list[float]]] = {}
    recalls: dict[str, list[float]] = {"caught up": [], "rebuilt": []}
    same: list[bool] = []
    for write in ("add", "delete"):
        writer = SQLiteStore(path, derived_files_from=None)
        last = n - PER_DOC
        if write == "add":
            put(writer, last, vecs[last:])
        else:
            writer.delete_document(f"doc{last}")
        writer.close()
        live = n if write == "add" else n - PER_DOC
        t0 = time.perf_counter()
        store.dense_search(queries[0], K)
        first = {"caught up": time.perf_counter() - t0}
        rebuilt = SQLiteStore(path, derived_files_from=None)
        rebuilt.dense_catch_up = False
        t0 = time.perf_counter()
        rebuilt.dense_search(queries[0], K)
        first["rebuilt"] = time.perf_counter() - t0
        assert store.dense_loads["caught_up"] >= 1 and rebuilt.dense_loads == {"built": 1}
        for name, s in first.items():
            rows.setdefault(f"first search after the {write} (s)", {})[name] = [s]
        both = {"caught up": store, "rebuilt": rebuilt}
        for i, q in enumerate(queries):
            order = ("caught up", "rebuilt") if i % 2 == 0 else ("rebuilt", "caught up")
            tops = {}
            for name in order:
                t0 = time.perf_counter()
                hits = both[name].dense_search(q, K)
                rows.setdefault(f"dense top-50 after the {write} (ms)", {}).setdefault(
                    name, []).append((time.perf_counter() - t0) * 1000)
                tops[name] = [int(h.chunk_id[1:]) for h in hits[:10]]
            at, _ = exact_top(vecs[:live], q, 10)
            truth = set(at.tolist())
            for name, top in tops.items():
                recalls[name].append(len(truth & set(top)) / 10)
            same.append(tops["caught up"] == tops["rebuilt"])
        rebuilt.close()
        note(f"{write} done")
    store.close()
    print(f"\n{platform.machine()}, {os.cpu_count()} cores; {n:,} chunks x {DIM}-d, "
          f"{args.queries} queries; end {time.strftime('%H:%M:%S')} load "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    print("\n| measure | caught up | rebuilt | caught up / rebuilt |\n|---|---|---|---|")
    for key, by in rows.items():
        a, b = by["caught up"], by["rebuilt"]
        if len(a) == 1:
            print(f"| {key} | {a[0]:.3f} | {b[0]:.3f} | {a[0] / b[0]:.4f} |")
        else:
            print(f"| {key}, p50 / p95 | {pct(a, 50):.2f} / {pct(a, 95):.2f} | "
                  f"{pct(b, 50):.2f} / {pct(b, 95):.2f} | {pct(a, 50) / pct(b, 50):.2f} |")
    print(f"| recall@10 against exact | {np.mean(recalls['caught up']):.4f} | "
          f"{np.mean(recalls['rebuilt']):.4f} | - |")
    print(f"\nsame top 10 (ids, order): {np.mean(same):.1%} of queries")


if __name__ == "__main__":
    main()
