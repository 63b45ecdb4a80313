"""HNSW recall of the PostgreSQL store on real embeddings, against exact search, in one run.

``benchmarks/stores.py`` uses random unit vectors, which have no neighbourhood structure and
are the worst case for a graph index. This script measures the same index (pgvector HNSW,
cosine, m=16, ef_construction=64, built once by ``bulk_load``) on what citewise really stores:

* chunks: the first N distinct ~200-word pieces of ``latency.text_passages`` (SciFact abstracts,
  then CUAD contracts, then ru_legal_qa codes), embedded with citewise's default model
  (``minilm``: all-MiniLM-L6-v2, 384-d, float32, L2-normalised) through ``load_embedder``;
  the vectors are cached in ``--work`` so a re-run does not embed again;
* queries: real questions embedded with ``embed_query``: the first 300 SciFact claims (by id),
  the first 100 LegalBench-RAG CUAD questions and the first 100 ru_legal_qa questions;
* control: the same number of random unit vectors and random unit queries (stores.py's case).

``--vectors PATH.npz`` takes the chunk vectors from an ``.npz`` file instead (key ``vectors``,
float32 (n, 384), L2-normalised, made by the same model), for example the 30,006 minilm
vectors of CUAD clause units that ``benchmarks/build_scan_prototypes.py`` caches in
``/tmp/citewise_scan_cache.npz``; only the queries are embedded then. On 2 busy cores minilm
embeds 200-word pieces at 3-4 chunks/s, so 30k pieces take hours; the cache is the way to a
large real set in minutes.

Measured for each ef_search: recall@10 (``dense_search(q, 10)``) and recall@50
(``dense_search(q, 50)``) against exact search (numpy, float32), p50/p95 ms of the top-50
search; the exact baseline is the SQLite store's ``dense_search`` (numpy over the matrix) on the
same vectors and queries. The store searches with ``max(ef_search, k)`` candidates, so ef 40 is
ef 50 for the top 50. Recall@k counts a returned chunk as right when its cosine is at least the
k-th exact cosine minus 1e-5 (as ann-benchmarks does), so exact duplicates (boilerplate
contract text) are not counted as misses when the index returns the other copy.

Usage::

    python benchmarks/hnsw_recall.py --chunks 30000 [--ef 40,100,200] [--work /tmp/hnsw-recall]
    python benchmarks/hnsw_recall.py --vectors /tmp/citewise_scan_cache.npz

Prints the embedding rate and a Markdown table; docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from latency import DATASETS, text_passages  # noqa: E402
from tests import pgserver  # noqa: E402

from citewise.embed import load_embedder  # noqa: E402
from citewise.eval.datasets import load_beir  # noqa: E402
from citewise.eval.jsonl import jsonl_values  # noqa: E402
from citewise.store.postgres import PostgresStore  # noqa: E402
from citewise.store.sqlite import SQLiteStore  # noqa: E402
from citewise.types import Chunk, Document  # noqa: E402

PER_DOC = 100
DISTINCT = 32_643  # distinct pieces text_passages makes from the shared datasets


def load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def questions() -> list[tuple[str, str]]:
    """(query set, question): 300 SciFact claims, the first 100 LegalBench-RAG CUAD questions
    (the sample holds 50) and 100 ru_legal_qa questions."""
    sci = load_beir(DATASETS / "scifact")
    out = [("scifact", q) for _, q in sorted(sci.queries.items())][:300]
    with (DATASETS / "legalbench_rag_sample" / "cuad.csv").open(encoding="utf-8") as f:
        out += [("cuad", row["prompt"]) for row in csv.DictReader(f)][:100]
    ru = DATASETS / "ru_legal_qa" / "rag_data_located.jsonl"
    out += [("ru_legal_qa", row["question"]) for row in jsonl_values(ru)][:100]
    return out


def real_vectors(n: int, work: Path, threads: int) -> tuple[np.ndarray, np.ndarray, float]:
    """float32 (n, 384) chunk vectors, (q, 384) query vectors, chunks/s of the embedding (0.0
    when read from the cache)."""
    path = work / f"hnsw-real-{n}.npz"
    if path.exists():
        z = np.load(path)
        return z["chunks"], z["queries"], 0.0
    texts = text_passages(n)
    embedder = load_embedder("minilm", threads)
    embedder.embed_documents(texts[:32])  # warm-up
    t0 = time.perf_counter()
    parts = []
    for i in range(0, n, 2000):
        parts.append(embedder.embed_documents(texts[i:i + 2000]))
        done = i + len(parts[-1])
        print(f"# embedded {done:,} ({done / (time.perf_counter() - t0):.0f} chunks/s, "
              f"{load()})", file=sys.stderr, flush=True)
    rate = n / (time.perf_counter() - t0)
    chunks = np.concatenate(parts)
    queries = np.stack([embedder.embed_query(q) for _, q in questions()])
    work.mkdir(parents=True, exist_ok=True)
    np.savez(path, chunks=chunks, queries=queries)
    return chunks, queries, rate


def fill(store, vecs: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    """One document per 100 chunks; empty BM25 terms (only dense search is measured)."""
    store.bind_model("minilm", vecs.shape[1])
    for d in range(0, len(vecs), PER_DOC):
        doc = Document(id=f"doc{d}", path=f"r/doc{d}.txt", source_path=f"r:{d}", title=f"doc{d}",
                       format="text", content_hash=str(d))
        part = vecs[d:d + PER_DOC]
        chunks = [Chunk(id=f"c{d + i}", document_id=doc.id, ordinal=i, text="-",
                        source_text="-", char_start=0, char_end=1, content_hash=f"h{d + i}")
                  for i in range(len(part))]
        store.upsert_document(doc, chunks, part, [""] * len(part))


def recall(hits, exact_scores: np.ndarray, k: int) -> float:  # type: ignore[no-untyped-def]
    """Share of the k returned chunks whose cosine reaches the k-th exact cosine (- 1e-5)."""
    kth = float(np.sort(exact_scores)[-k])
    return sum(h.score >= kth - 1e-5 for h in hits[:k]) / k


def measure(store, vecs: np.ndarray, qvecs: np.ndarray, efs: list[int]) -> dict:  # type: ignore[no-untyped-def]
    scores = qvecs @ vecs.T  # (q, n) exact cosines
    out = {}
    for ef in efs:
        if ef:
            store.ef_search = ef
        for q in qvecs[:5]:
            store.dense_search(q, 50)
        times, r10, r50 = [], [], []
        for i, q in enumerate(qvecs):
            r10.append(recall(store.dense_search(q, 10), scores[i], 10))
            t0 = time.perf_counter()
            hits = store.dense_search(q, 50)
            times.append((time.perf_counter() - t0) * 1000)
            r50.append(recall(hits, scores[i], 50))
        out[ef] = (float(np.mean(r10)), float(np.mean(r50)), float(np.percentile(times, 50)),
                   float(np.percentile(times, 95)), np.asarray(r10), np.asarray(r50))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=30_000)
    ap.add_argument("--ef", default="40,100,200")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--vectors", type=Path, default=None,
                    help=".npz with float32 (n, 384) minilm chunk vectors under 'vectors'")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "hnsw-recall")
    args = ap.parse_args()
    if args.vectors is None and args.chunks > DISTINCT:
        ap.error(f"--chunks at most {DISTINCT:,} (distinct pieces in the shared datasets)")
    efs = [int(e) for e in args.ef.split(",")]
    print(f"# start {time.strftime('%H:%M:%S')} {load()}", file=sys.stderr, flush=True)
    if args.vectors is not None:
        vecs = np.ascontiguousarray(np.load(args.vectors)["vectors"], dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1)
        if vecs.ndim != 2 or vecs.shape[1] != 384 or not np.allclose(norms, 1.0, atol=1e-3):
            ap.error(f"--vectors {args.vectors}: 'vectors' must be float32 (n, 384), "
                     "L2-normalised minilm embeddings")
        args.chunks = len(vecs)
        embedder = load_embedder("minilm", args.threads)
        qvecs = np.stack([embedder.embed_query(q) for _, q in questions()])
        rate = 0.0
    else:
        vecs, qvecs, rate = real_vectors(args.chunks, args.work, args.threads)
    rng = np.random.default_rng(0)
    rand = rng.normal(size=vecs.shape).astype(np.float32)
    rand /= np.linalg.norm(rand, axis=1, keepdims=True)
    rq = rng.normal(size=qvecs.shape).astype(np.float32)
    rq /= np.linalg.norm(rq, axis=1, keepdims=True)
    print(f"# vectors ready {time.strftime('%H:%M:%S')} {load()}", file=sys.stderr, flush=True)

    server = pgserver.start(durable=True, extra="-c synchronous_commit=off "
                            "-c shared_buffers=1GB -c maintenance_work_mem=1GB")
    results = {}
    try:
        pgserver.wait_ready(server.url)
        with psycopg.connect(server.url, autocommit=True) as admin:
            admin.execute("CREATE DATABASE real_vectors")
            admin.execute("CREATE DATABASE random_vectors")
        for label, v, q in (("real", vecs, qvecs), ("random", rand, rq)):
            pg = PostgresStore(server.url_for(f"{label}_vectors"))
            pg.bind_model("minilm", v.shape[1])
            t0 = time.perf_counter()
            with pg.bulk_load():
                fill(pg, v)
            load_s = time.perf_counter() - t0
            pg.db.execute("VACUUM ANALYZE chunks")
            plan = " ".join(r[0] for r in pg.db.execute(
                "EXPLAIN SELECT c.id FROM chunks c ORDER BY c.embedding <=> %s LIMIT 50",
                (q[0],)))
            print(f"# {label}: the planner uses the HNSW index: {'chunks_embedding_hnsw' in plan}",
                  file=sys.stderr, flush=True)
            results[label] = measure(pg, v, q, efs)
            pg.close()
            sqlite_path = args.work / f"hnsw-{label}-{args.chunks}.sqlite3"
            sqlite_path.unlink(missing_ok=True)
            sq = SQLiteStore(sqlite_path)
            fill(sq, v)
            results[label][0] = measure(sq, v, q, [0])[0]
            sq.close()
            sqlite_path.unlink(missing_ok=True)
            print(f"# {label}: PostgreSQL bulk load {load_s:.0f} s; measured "
                  f"{time.strftime('%H:%M:%S')} {load()}", file=sys.stderr, flush=True)
    finally:
        server.stop()

    print(f"# {args.chunks:,} chunks x {vecs.shape[1]}-d; {len(qvecs)} queries; minilm "
          f"embedding {rate:.1f} chunks/s"
          + ((f" (vectors from {args.vectors})" if args.vectors else " (cached)") if not rate else "")
          + f"; end {time.strftime('%H:%M:%S')} {load()}")
    print("\n| vectors | search | recall@10 | recall@50 | top-50 ms p50 / p95 | p50 / exact |")
    print("|---|---|---|---|---|---|")
    for label in ("real", "random"):
        base = results[label][0][2]
        for ef in [0, *efs]:
            r10, r50, p50, p95 = results[label][ef][:4]
            search = "exact (SQLite store, numpy)" if not ef else f"HNSW ef {ef}"
            print(f"| {label} | {search} | {r10:.3f} | {r50:.3f} | {p50:.1f} / {p95:.1f} | "
                  f"{p50 / base:.2f} |")

    sets = [name for name, _ in questions()]
    print("\n| real vectors: recall@10 / recall@50 by query set | "
          + " | ".join(f"HNSW ef {ef}" for ef in efs) + " |\n|---|" + "---|" * len(efs))
    for name in dict.fromkeys(sets):
        mask = np.array([s == name for s in sets])
        cells = [f"{results['real'][ef][4][mask].mean():.3f} / {results['real'][ef][5][mask].mean():.3f}"
                 for ef in efs]
        print(f"| {name} ({mask.sum()} queries) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
