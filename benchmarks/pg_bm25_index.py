"""PostgreSQL BM25: the SQL scoring over ``postings`` against the in-memory index per process
(``PostgresStore(bm25_index=True)``, issue 22 item 4), measured query by query in turn on one
server.

Data: the corpus of ``benchmarks/stores.py`` (real ~200-word text pieces, random 384-d unit
vectors, 100 chunks a document), written with ``bulk_load()``. Queries: SciFact test queries.
Reported: p50 / p95 ms of the top 50 for both paths and with a 1% filter (every 100th
document), identical top 10 (ids and scores) and top-50 overlap, the index build time and its
arrays' size.

Usage::

    python benchmarks/pg_bm25_index.py --chunks 50000 --queries 100 [--url postgresql://...]

Without ``--url`` a throw-away server is started (``tests/pgserver.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from latency import DATASETS, text_passages, write_synthetic  # noqa: E402
from tests import pgserver  # noqa: E402

from citewise.eval.datasets import load_beir  # noqa: E402
from citewise.store.postgres import PostgresStore  # noqa: E402
from citewise.text.analysis import tokenize  # noqa: E402

DIM, PER_DOC, K = 384, 100, 50


def note(message: str) -> None:
    print(f"# {time.strftime('%H:%M:%S')} load {' '.join(f'{x:.1f}' for x in os.getloadavg())}:"
          f" {message}", file=sys.stderr, flush=True)


def fill(store: PostgresStore, n: int) -> None:
    texts = text_passages(n)
    store.bind_model("minilm", DIM)
    with store.bulk_load():
        took = write_synthetic(store, texts, DIM, PER_DOC)
    note(f"wrote {n:,} chunks in {took:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=50_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--url", help="an empty database (default: a throw-away server)")
    args = ap.parse_args()
    server = None
    url = args.url
    if url is None:
        server = pgserver.start(extra="-c shared_buffers=1GB")
        url = server.url
    try:
        sql = PostgresStore(url)
        if sql.info().chunks != args.chunks:
            fill(sql, args.chunks)
        sql.db.execute("VACUUM ANALYZE")
        index = PostgresStore(url, bm25_index=True, bm25_build="wait")
        sci = load_beir(DATASETS / "scifact")
        queries = [tokenize(q) for _, q in sorted(sci.queries.items())][: args.queries]
        t0 = time.perf_counter()
        with index.snapshot():
            built = index._load_bm25_index()
        build_s = time.perf_counter() - t0
        mb = sum(a.nbytes for a in (built.rowids, built.lengths, built.indptr, built.positions,
                                    built.counts)) / 1e6
        note(f"index built in {build_s:.1f} s, {mb:.0f} MB of arrays, "
             f"{len(built.vocabulary):,} terms, {built.positions.size:,} postings")
        one = {"document_ids": [f"doc{d}" for d in range(0, args.chunks, PER_DOC)][::100]}
        systems = {"sql": lambda t: sql.sparse_search(t, K),
                   "index": lambda t: index.sparse_search(t, K),
                   "sql, 1% filter": lambda t: sql.sparse_search(t, K, one),
                   "index, 1% filter": lambda t: index.sparse_search(t, K, one)}
        for t in queries[:5]:  # warm-up: buffers, the filter's mask
            for fn in systems.values():
                fn(t)
        times: dict[str, list[float]] = {name: [] for name in systems}
        outs: dict[str, list[list[tuple[str, float | None]]]] = {name: [] for name in systems}
        for t in queries:  # in turn, query by query: both paths see the same load
            for name, fn in systems.items():
                t1 = time.perf_counter()
                hits = fn(t)
                times[name].append((time.perf_counter() - t1) * 1e3)
                outs[name].append([(h.chunk_id, h.sparse) for h in hits])
        note("queries done")
        base = float(np.median(times["sql"]))
        print(f"\n{args.chunks:,} chunks, {len(queries)} SciFact queries, top {K}; "
              f"index built in {build_s:.1f} s ({mb:.0f} MB)\n")
        print("| BM25 top-50 | p50 ms | p95 ms | p50 / sql p50 |\n|---|---|---|---|")
        for name, ms in times.items():
            print(f"| {name} | {np.median(ms):.2f} | {np.percentile(ms, 95):.2f} | "
                  f"{np.median(ms) / base:.3f} |")
        for a, b in (("index", "sql"), ("index, 1% filter", "sql, 1% filter")):
            same10 = np.mean([x[:10] == y[:10] for x, y in zip(outs[a], outs[b], strict=True)])
            same50 = np.mean([x == y for x, y in zip(outs[a], outs[b], strict=True)])
            print(f"\n{a} vs {b}: identical top 10 (ids, scores) {same10:.1%}; "
                  f"identical top 50 {same50:.1%}")
        sql.close()
        index.close()
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
