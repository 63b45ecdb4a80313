"""Interleaved, query by query: the saved derived indexes mapped vs the same arrays copied onto the heap (run after benchmarks/memory.py left the files)."""
import os
import sys
import time

import numpy as np

sys.path[:0] = ["benchmarks", "."]
from latency import DATASETS

from citewise.eval.datasets import load_beir
from citewise.store.bm25_index import BM25Index
from citewise.store.dense_index import DenseIndex
from citewise.store.sqlite import SQLiteStore
from citewise.text.analysis import tokenize

path = "/tmp/citewise-mem/memory-big.sqlite3"
mapped = SQLiteStore(path, bm25_build="wait")
heap = SQLiteStore(path, bm25_build="wait", derived_files_from=None)
m = mapped._load_matrix()
with mapped.snapshot():
    b = mapped._load_bm25_index()
heap._matrix = DenseIndex(m.generation, np.array(m.rowids), np.array(m.vectors), np.array(m.scales), np.array(m.codes))
heap._bm25_kept.index = BM25Index(b.generation, np.array(b.rowids), np.array(b.lengths), b.vocabulary, np.array(b.indptr), np.array(b.positions), np.array(b.counts), b.avgdl)
sci = load_beir(DATASETS / "scifact")
qt = [tokenize(q) for _, q in sorted(sci.queries.items())][:100]
rng = np.random.default_rng(5); qv = rng.normal(size=(100, 384)).astype(np.float32); qv /= np.linalg.norm(qv, axis=1, keepdims=True)
t = {k: [] for k in ("dense mapped", "dense heap", "bm25 mapped", "bm25 heap")}
same = 0
for v, q in zip(qv, qt):
    for name, s in (("mapped", mapped), ("heap", heap)):
        t0 = time.perf_counter(); d = s.dense_search(v, 50); t[f"dense {name}"].append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter(); h = s.sparse_search(q, 50); t[f"bm25 {name}"].append((time.perf_counter() - t0) * 1e3)
    same += [x.chunk_id for x in mapped.dense_search(v, 50)] == [x.chunk_id for x in heap.dense_search(v, 50)] and [(x.chunk_id, x.score) for x in mapped.sparse_search(q, 50)] == [(x.chunk_id, x.score) for x in heap.sparse_search(q, 50)]
for k, ms in t.items():
    print(f"| {k} | {np.median(ms):.2f} | {np.percentile(ms, 95):.2f} |")
print("identical top 50 both legs:", same, "/ 100; load", os.getloadavg())
