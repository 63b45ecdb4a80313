"""BM25 (and exact dense) on the SQLite store: today's FTS5 path vs the in-memory index, beside
bm25s and tantivy, in one run, queries interleaved.

Data: ``benchmarks/stores.py``'s corpus (N chunks of real text, 100 per document, random unit
384-d vectors, analysed terms cached under ``--work``), written once into
``<work>/bm25-N.sqlite3`` (reused when it holds N chunks). Queries: SciFact test queries,
analysed by :func:`citewise.text.analysis.tokenize`.

Measured (p50 / p95 ms over the queries, the systems taking turns query by query):

* ``fts5``: ``SQLiteStore(bm25_index=False).sparse_search`` (FTS5's best ``max(5k, 300)``
  candidates re-scored with Lucene BM25), top 50: the implementation before the index;
* ``index``: ``SQLiteStore().sparse_search`` (citewise.store.bm25_index), top 50; its build
  time and size are reported; also with a ``document_ids`` filter keeping 1% of the chunks;
* ``bm25s`` (``method="lucene"``, the store's k1 / b, float64, fed the store's analysed terms;
  scores every chunk, top 50 by ``argpartition``) and ``tantivy`` (its own BM25, k1 1.2 /
  b 0.75 fixed, fed the analysed terms through a whitespace tokenizer), when installed;
* agreement: identical top 10 (ids and order) of the index vs ``fts5`` and vs ``bm25s``;
* dense: ``SQLiteStore.dense_search`` top 50, exact (``dense_exact_below`` above N; the int8
  path is measured by ``benchmarks/dense_index.py``) vs the bare float32 matrix-vector product on the
  same matrix (what the search cannot go below), and that product batched over all queries
  (one matrix-matrix product, per query), which is what a "0.8 ms" numpy figure measures;
* the store's default dense path at this size (int8 codes or their inverted file) beside exact;
* hybrid: ``Retriever.search`` without the query embedding (minilm, as
  ``benchmarks/stores.py``), with ``--hybrid``: the implementation before issue 22 (FTS5 path
  and exact dense search) vs the store's defaults (the BM25 index, the default dense path).

Usage::

    python benchmarks/bm25_index.py --chunks 100000 [--queries 200] [--hybrid] [--peers tantivy]

Prints Markdown tables and the load average (``os.getloadavg``); docs/benchmarks.md records
them.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from latency import DATASETS  # noqa: E402
from stores import DIM, K, corpus, ingest, load, note, pct  # noqa: E402

from citewise.eval.datasets import load_beir  # noqa: E402
from citewise.store.sqlite import BM25_B, BM25_K1, SQLiteStore  # noqa: E402
from citewise.text.analysis import tokenize  # noqa: E402


def interleaved(systems: dict, inputs: list) -> tuple[dict[str, list[float]], dict[str, list]]:  # type: ignore[type-arg]
    """Each system answers each input in turn (after 5 warm-up inputs each): ms and outputs."""
    for fn in systems.values():
        for x in inputs[:5]:
            fn(x)
    times: dict[str, list[float]] = {name: [] for name in systems}
    outs: dict[str, list] = {name: [] for name in systems}  # type: ignore[type-arg]
    for x in inputs:
        for name, fn in systems.items():
            t0 = time.perf_counter()
            outs[name].append(fn(x))
            times[name].append((time.perf_counter() - t0) * 1000)
    return times, outs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--hybrid", action="store_true", help="also Retriever.search (loads minilm)")
    ap.add_argument("--peers", default="bm25s,tantivy",
                    help="peer BM25 libraries to measure beside the store (bm25s holds every "
                         "token as a Python string: leave it out at 1M chunks on 24 GB)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "citewise-bench")
    args = ap.parse_args()
    note("start")
    n = args.chunks
    texts, terms, vecs = corpus(n, args.work)
    path = args.work / f"bm25-{n}.sqlite3"
    store = SQLiteStore(path, bm25_build="wait")
    if store.info().chunks != n:
        store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        store = SQLiteStore(path, bm25_build="wait")
        rate = ingest(store, texts, terms, vecs)
        note(f"ingested {n} chunks at {rate:,.0f} chunks/s")
    del texts  # ~1.5 GB at 1M; only the analysed terms are needed from here on
    peers = {p.strip() for p in args.peers.split(",") if p.strip()}
    # the implementation before issue 22: FTS5 candidates re-scored, and exact dense search
    fts = SQLiteStore(path, bm25_index=False, dense_exact_below=n + 1)
    sci = load_beir(DATASETS / "scifact")
    queries = [q for _, q in sorted(sci.queries.items())][: args.queries]
    q_terms = [tokenize(q) for q in queries]

    with store.snapshot():
        t0 = time.perf_counter()
        index = store._load_bm25_index()
        build_s = time.perf_counter() - t0
    index_mb = sum(a.nbytes for a in (index.rowids, index.lengths, index.indptr,
                                      index.positions, index.counts)) / 1e6
    note(f"index built in {build_s:.1f} s, {index_mb:.0f} MB arrays, "
         f"{len(index.vocabulary):,} terms, {index.positions.size:,} postings")

    systems = {"fts5": lambda t: fts.sparse_search(t, K),
               "index": lambda t: store.sparse_search(t, K)}
    doc_ids = [f"doc{d}" for d in range(0, n, 100)][:: 100]  # 1% of the documents
    one_percent = {"document_ids": doc_ids}
    systems["index, 1% filter"] = lambda t: store.sparse_search(t, K, one_percent)
    systems["fts5, 1% filter"] = lambda t: fts.sparse_search(t, K, one_percent)
    chunk_ids = [f"c{i}" for i in range(n)]
    try:
        if "bm25s" not in peers:
            raise ImportError("not asked for")
        import bm25s

        t0 = time.perf_counter()
        ref = bm25s.BM25(method="lucene", k1=BM25_K1, b=BM25_B, dtype="float64")
        ref.index([t.split() for t in terms], show_progress=False)
        note(f"bm25s indexed in {time.perf_counter() - t0:.1f} s")

        def bm25s_top(t: list[str]) -> list[str]:
            scores = ref.get_scores(t)
            top = np.argpartition(-scores, K)[:K]
            top = top[np.lexsort((top, -scores[top]))]
            return [chunk_ids[i] for i in top if scores[i] > 0]

        systems["bm25s"] = bm25s_top
    except ImportError:
        note("bm25s not measured (not installed or not in --peers)")
    try:
        if "tantivy" not in peers:
            raise ImportError("not asked for")
        import tantivy

        t0 = time.perf_counter()
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("terms", stored=False, tokenizer_name="whitespace")
        builder.add_integer_field("row", stored=True, fast=True)
        schema = builder.build()
        tindex = tantivy.Index(schema)
        writer = tindex.writer(heap_size=200_000_000, num_threads=1)
        for i, t in enumerate(terms):
            writer.add_document(tantivy.Document(terms=t, row=i))
        writer.commit()
        writer.wait_merging_threads()
        tindex.reload()
        searcher = tindex.searcher()
        note(f"tantivy indexed in {time.perf_counter() - t0:.1f} s")

        def tantivy_top(t: list[str]) -> list[str]:
            if not t:
                return []
            query = tindex.parse_query(" OR ".join(f'"{x}"' for x in t), ["terms"])
            found = searcher.search(query, K).hits
            return [chunk_ids[searcher.doc(a)["row"][0]] for _, a in found]

        systems["tantivy"] = tantivy_top
    except ImportError:
        note("tantivy not measured (not installed or not in --peers)")

    times, outs = interleaved(systems, q_terms)
    note("BM25 measured")

    def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
        return [h if isinstance(h, str) else h.chunk_id for h in hits]

    def same10(a: str, b: str) -> float:
        return float(np.mean([ids(x)[:10] == ids(y)[:10]
                              for x, y in zip(outs[a], outs[b], strict=True)]))

    def overlap10(a: str, b: str) -> float:
        return float(np.mean([len(set(ids(x)[:10]) & set(ids(y)[:10])) / max(len(ids(y)[:10]), 1)
                              for x, y in zip(outs[a], outs[b], strict=True)]))

    # dense: the store's search vs the bare product it cannot go below
    qvecs = np.random.default_rng(1).normal(size=(args.queries, DIM)).astype(np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    exact_store = fts  # exact dense search (the int8 codes: benchmarks/dense_index.py)
    matrix = exact_store._load_matrix().vectors
    dense = {"dense_search": lambda q: exact_store.dense_search(q, K),
             "matrix @ q": lambda q: matrix @ q,
             "dense_search, 1% filter": lambda q: exact_store.dense_search(q, K, one_percent),
             # the store's own choice at this size (int8 codes, or their inverted file)
             "dense_search, default path": lambda q: store.dense_search(q, K),
             "dense_search, default path, 1% filter":
                 lambda q: store.dense_search(q, K, one_percent)}
    dtimes, douts = interleaved(dense, list(qvecs))
    t0 = time.perf_counter()
    _ = matrix @ qvecs.T
    batched_ms = (time.perf_counter() - t0) * 1000 / len(qvecs)
    exact = [set(np.argpartition(-(vecs @ q), K)[:K].tolist()) for q in qvecs[:20]]
    recall = np.mean([len(e & {int(h.chunk_id[1:]) for h in hits}) / K
                      for e, hits in zip(exact, douts["dense_search"][:20], strict=False)])
    recall_default = np.mean([len(e & {int(h.chunk_id[1:]) for h in hits}) / K for e, hits in
                              zip(exact, douts["dense_search, default path"][:20], strict=False)])
    note("dense measured")

    hybrid: dict[str, list[float]] = {}
    if args.hybrid:
        from citewise.config import Settings
        from citewise.embed import load_embedder
        from citewise.retrieve.retriever import Retriever

        settings = Settings(home=args.work / "home", llm_provider="none")
        embedder = load_embedder(settings.embedding_model, settings.threads)
        retrievers = {"hybrid, fts5 + exact dense": Retriever(settings, fts, embedder),
                      "hybrid, index": Retriever(settings, store, embedder)}
        htimes, houts = interleaved({k: r.search for k, r in retrievers.items()}, queries)
        for name in retrievers:
            hybrid[name] = [t - o.timings_ms.get("embed_ms", 0.0)
                            for t, o in zip(htimes[name], houts[name], strict=True)]
        note("hybrid measured")

    print(f"# {platform.machine()}, {os.cpu_count()} cores; {n:,} chunks x {DIM}-d, "
          f"{len(queries)} SciFact queries; end {time.strftime('%H:%M:%S')} {load()}")
    print(f"# index: built in {build_s:.1f} s, {index_mb:.0f} MB of arrays, "
          f"{len(index.vocabulary):,} terms, {index.positions.size:,} postings")
    base = pct(times["fts5"], 50)
    print("\n| BM25 top-50 | p50 ms | p95 ms | p50 / fts5 p50 |\n|---|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {pct(ts, 50):.2f} | {pct(ts, 95):.2f} | {pct(ts, 50) / base:.3f} |")
    print(f"\nidentical top 10 (ids, order): index vs fts5 {same10('index', 'fts5'):.1%}"
          + (f"; index vs bm25s {same10('index', 'bm25s'):.1%}" if "bm25s" in outs else "")
          + (f"; top-10 overlap index vs tantivy {overlap10('tantivy', 'index'):.1%}"
             if "tantivy" in outs else "")
          + f"; 1% filter: index vs fts5 {same10('index, 1% filter', 'fts5, 1% filter'):.1%}")
    dbase = pct(dtimes["matrix @ q"], 50)
    print("\n| dense top-50 | p50 ms | p95 ms | p50 / bare product p50 |\n|---|---|---|---|")
    for name, ts in dtimes.items():
        print(f"| {name} | {pct(ts, 50):.2f} | {pct(ts, 95):.2f} | {pct(ts, 50) / dbase:.3f} |")
    print(f"| matrix @ all queries, per query | {batched_ms:.2f} | - | {batched_ms / dbase:.3f} |")
    print(f"\nrecall@50 vs numpy on 20 queries (random vectors, the worst case): exact "
          f"dense_search {recall:.3f}, default path {recall_default:.3f}")
    if hybrid:
        hbase = pct(hybrid["hybrid, fts5 + exact dense"], 50)
        print("\n| hybrid without query embedding | p50 ms | p95 ms | p50 / before p50 |\n"
              "|---|---|---|---|")
        for name, ts in hybrid.items():  # p50 / the implementation before issue 22
            print(f"| {name} | {pct(ts, 50):.2f} | {pct(ts, 95):.2f} | {pct(ts, 50) / hbase:.3f} |")


if __name__ == "__main__":
    main()
