"""Hybrid retrieval without the query embedding on the SQLite store: this tree's
``Retriever.search`` against another tree's (``--baseline-src``), queries interleaved, with
the time spent outside the two legs.

Data: ``benchmarks/stores.py``'s corpus (N chunks of real text, 100 per document, random unit
384-d vectors), written once into ``<work>/bm25-N.sqlite3`` (the file
``benchmarks/bm25_index.py`` builds; reused when it holds N chunks), its BM25 and dense
indexes built (and saved next to it) before the measurement. Queries: SciFact test queries.

Each tree runs in a process of its own (``PYTHONPATH`` its ``src``), both opening the same file
with ``SQLiteStore(bm25_build="wait")`` and the default settings (minilm, weighted fusion, no
reranker, ``top_k`` 5, one chunk per file). The question embeddings are precomputed: each
process embeds every query (and the asking clause the selection embeds) once with the real
model before measuring (the texts ``search`` embeds: the cleaned question cut to the
model's limit, and its asking clause), and later calls return the same vectors from a cache;
5 searches load the indexes, so the other queries' documents are read cold. Then the
processes answer query by query in turn (the order alternating), each timing its own
``Retriever.search`` call (the embedding's ``embed_ms`` subtracted), so load from other jobs
falls on both alike.

Reported per tree: p50 / p95 ms of the search, of each stage (``dense_ms``, ``sparse_ms``:
the two legs; ``fusion_ms``, ``load_ms``: candidates' chunks, coverage and relevance;
``select_ms``: the within-document step), and of the rest, the search minus the two legs;
p50 ratios to the baseline; and how many queries got identical results in both trees (every
hit's chunk id, source, score, dense, sparse, fused and relevance, floats compared exactly).

``--baseline-db`` gives the baseline process a file of its own, a copy of the same state
(its derived folder copied with it): this tree's process migrates the file it opens, and a
migration that only adds an index (m005) would otherwise speed the baseline's reads too.

``--bm25``: each process also times ``SQLiteStore.sparse_search`` (BM25 top 50 through the
store: the leg ``Retriever.search`` runs, with the hits' ids) right after each search, and
the two trees' top 50 are compared (ids, order, scores as exact reprs).

Usage::

    python benchmarks/hybrid.py --chunks 100000 --queries 200 --baseline-src ../base/src \
        [--baseline-db copy/bm25-100000.sqlite3] [--bm25]
    python benchmarks/hybrid.py --chunks 100000 --postgres postgresql://... --baseline-src ...

``--postgres URL``: the PostgreSQL store instead (both trees on the same database, BM25 from
each process's in-memory index, dense from pgvector's HNSW index), loaded with the same
corpus when it is empty.

Prints Markdown tables and the load average (``os.getloadavg``); docs/benchmarks.md records
them.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("dense_ms", "sparse_ms", "fusion_ms", "load_ms", "select_ms")


def load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def note(message: str) -> None:
    print(f"# {message} ({time.strftime('%H:%M:%S')}, {load()})", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def queries_of(n: int) -> list[str]:
    sys.path[:0] = [str(ROOT / "benchmarks")]
    from latency import DATASETS

    from citewise.eval.datasets import load_beir

    scifact = load_beir(DATASETS / "scifact")
    return [q for _, q in sorted(scifact.queries.items())][:n]


def open_store(db: str):  # type: ignore[no-untyped-def]
    """The store at ``db``: a PostgreSQL URL (BM25 from the in-memory index per process, as
    a server runs it) or an SQLite file."""
    if db.startswith("postgresql://"):
        from citewise.store.postgres import PostgresStore

        return PostgresStore(db, bm25_index=True, bm25_build="wait")
    from citewise.store.sqlite import SQLiteStore

    return SQLiteStore(Path(db), bm25_build="wait")


def worker(db: str, n_queries: int, home: Path, bm25: bool = False) -> None:
    """Answer query numbers read from stdin, one JSON line each: ms and a result digest."""
    from citewise.config import Settings
    from citewise.embed import load_embedder
    from citewise.retrieve.retriever import (
        Retriever,
        _tail_to_fit,
        clean_query,
        question_clause,
    )
    from citewise.text.analysis import tokenize

    queries = queries_of(n_queries)
    store = open_store(db)
    settings = Settings(home=home, llm_provider="none")
    embedder = load_embedder(settings.embedding_model, settings.threads)
    # precomputed embeddings: the real model's vectors, computed once per text
    embedder.embed_query = functools.lru_cache(maxsize=None)(embedder.embed_query)  # type: ignore[method-assign]
    retriever = Retriever(settings, store, embedder)
    for q in queries:  # the texts search embeds: the question, and its asking clause
        cleaned = clean_query(q, settings.max_query_chars)
        embedder.embed_query(_tail_to_fit(cleaned, embedder))
        embedder.embed_query(question_clause(cleaned))
    for q in queries[:5]:  # loads (maps) the indexes; the other queries' pages stay cold
        retriever.search(q)
    terms = [tokenize(q) for q in queries]
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        i = int(line)
        t0 = time.perf_counter()
        result = retriever.search(queries[i])
        ms = (time.perf_counter() - t0) * 1000 - result.timings_ms.get("embed_ms", 0.0)
        digest = [(h.chunk_id, h.source, repr(h.score), repr(h.dense), repr(h.sparse),
                   repr(h.fused), repr(h.relevance)) for h in result.hits]
        out = {"ms": ms, "stages": {s: result.timings_ms.get(s, 0.0) for s in STAGES},
               "hits": digest}
        if bm25:  # the BM25 leg alone through the store, top 50
            t0 = time.perf_counter()
            found = store.sparse_search(terms[i], 50)
            out["bm25_ms"] = (time.perf_counter() - t0) * 1000
            out["bm25"] = [(h.chunk_id, repr(h.score)) for h in found]
        print(json.dumps(out), flush=True)


def load_postgres(url: str, n: int, work: Path) -> None:
    """Write the corpus's ``n`` chunks into the PostgreSQL database at ``url`` when it holds
    none (``bulk_load``, two writer threads, then ``VACUUM ANALYZE``; shards.py's loader)."""
    from shards import documents
    from shards import load as load_into
    from stores import corpus

    from citewise.store.postgres import PostgresStore

    store = PostgresStore(url)
    held = store.info().chunks
    if held not in (0, n):
        raise SystemExit(f"{url} holds {held:,} chunks, not 0 or {n:,}: use another database")
    if held == 0:
        texts, terms, vecs = corpus(n, work)
        docs = documents(texts)
        write, build = load_into(store, [docs[0::2], docs[1::2]], terms, vecs)
        store.db.execute("VACUUM ANALYZE")
        note(f"PostgreSQL: {n:,} chunks written in {write:.0f} s, HNSW built in {build:.0f} s")
    store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--baseline-src", type=Path, required=False,
                    help="the src folder of the tree to compare with")
    ap.add_argument("--baseline-db", type=Path,
                    help="the baseline's own copy of the index file (default: the same file)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "citewise-bench")
    ap.add_argument("--postgres", metavar="URL",
                    help="measure the PostgreSQL store at URL instead (loaded with the corpus "
                         "when empty; both trees open it, so --baseline-db does not apply)")
    ap.add_argument("--bm25", action="store_true",
                    help="also time the store's sparse_search (BM25 top 50) alone, per query")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # the index file or URL
    args = ap.parse_args()
    if args.worker is not None:
        worker(args.worker, args.queries, args.work / "home", args.bm25)
        return
    note("start")
    n = args.chunks
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    from stores import corpus, ingest

    from citewise.store.sqlite import SQLiteStore

    path = args.work / f"bm25-{n}.sqlite3"
    if args.postgres:
        load_postgres(args.postgres, n, args.work)
    store = SQLiteStore(path, bm25_build="wait") if not args.postgres else None
    if store is not None and store.info().chunks != n:
        store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        texts, terms, vecs = corpus(n, args.work)
        store = SQLiteStore(path, bm25_build="wait")
        rate = ingest(store, texts, terms, vecs)
        del texts, terms, vecs
        note(f"ingested {n} chunks at {rate:,.0f} chunks/s")
    if store is not None:
        with store.snapshot():  # both indexes built and saved once, then mapped by the workers
            store._load_bm25_index()
            store._load_matrix()
        store.close()
        note("indexes ready")

    trees = {"this tree": ROOT / "src"}
    if args.baseline_src is not None:
        trees = {"baseline": args.baseline_src.resolve(), **trees}
    procs = {}
    for name, src in trees.items():
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(src.parent)])}
        procs[name] = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker",
             args.postgres or str(args.baseline_db if name == "baseline" and args.baseline_db
                                  else path),
             "--queries", str(args.queries), "--work", str(args.work),
             *(["--bm25"] if args.bm25 else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    for name, proc in procs.items():
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready.get("ready"), f"{name}: worker failed"
    note("workers ready (embeddings computed, indexes loaded)")

    got: dict[str, list[dict]] = {name: [] for name in procs}  # type: ignore[type-arg]
    names = list(procs)
    for i in range(args.queries):
        for name in (names if i % 2 == 0 else names[::-1]):
            proc = procs[name]
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(f"{i}\n")
            proc.stdin.flush()
            got[name].append(json.loads(proc.stdout.readline()))
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    note("measured")

    print(f"# {platform.machine()}, {os.cpu_count()} cores; "
          f"{'PostgreSQL' if args.postgres else 'SQLite'}; {n:,} chunks x 384-d, "
          f"{args.queries} SciFact queries; end {time.strftime('%H:%M:%S')} {load()}")
    base = names[0]
    print("\n| hybrid without query embedding | p50 ms | p95 ms | outside the legs p50 ms "
          "| outside p95 | p50 / " + base + " p50 | outside p50 / " + base + " |")
    print("|---|---|---|---|---|---|---|")
    summary = {}
    for name in names:
        total = [r["ms"] for r in got[name]]
        outside = [r["ms"] - r["stages"]["dense_ms"] - r["stages"]["sparse_ms"]
                   for r in got[name]]
        summary[name] = (pct(total, 50), pct(outside, 50))
    for name in names:
        total = [r["ms"] for r in got[name]]
        outside = [r["ms"] - r["stages"]["dense_ms"] - r["stages"]["sparse_ms"]
                   for r in got[name]]
        print(f"| {name} | {pct(total, 50):.2f} | {pct(total, 95):.2f} | "
              f"{pct(outside, 50):.2f} | {pct(outside, 95):.2f} | "
              f"{pct(total, 50) / summary[base][0]:.3f} | "
              f"{pct(outside, 50) / summary[base][1]:.3f} |")
    print("\n| stage p50 / p95 ms | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for stage in STAGES:
        cells = []
        for name in names:
            values = [r["stages"][stage] for r in got[name]]
            cells.append(f"{pct(values, 50):.2f} / {pct(values, 95):.2f}")
        print(f"| {stage} | " + " | ".join(cells) + " |")
    if args.bm25:
        bm25_base = pct([r["bm25_ms"] for r in got[base]], 50)
        print("\n| BM25 top 50 through the store | p50 ms | p95 ms | p50 / " + base + " p50 |")
        print("|---|---|---|---|")
        for name in names:
            values = [r["bm25_ms"] for r in got[name]]
            print(f"| {name} | {pct(values, 50):.2f} | {pct(values, 95):.2f} | "
                  f"{pct(values, 50) / bm25_base:.3f} |")
        if len(names) == 2:
            same_bm25 = sum(a["bm25"] == b["bm25"] for a, b in zip(
                got[names[0]], got[names[1]], strict=True))
            print(f"\nidentical BM25 top 50 (ids, order, scores): {same_bm25} of "
                  f"{args.queries} queries")
    if len(names) == 2:
        same = sum(a["hits"] == b["hits"] for a, b in zip(got[names[0]], got[names[1]],
                                                           strict=True))
        found = sum(bool(a["hits"]) for a in got[names[0]])
        print(f"\nidentical results (ids, order, sources, scores, relevance): {same} of "
              f"{args.queries} queries ({found} with evidence)")


if __name__ == "__main__":
    main()
