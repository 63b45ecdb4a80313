"""Per-stage query latency (p50/p95, ms): query embedding, dense, BM25, fusion, rerank.

Two collections:

* ``scifact``: the SciFact corpus indexed with the real embedding model (the index built by
  ``citewise eval beir``, cached under ``$CITEWISE_HOME/eval``), 300 test queries.
* ``synthetic-N``: N chunks of real text (SciFact abstracts, CUAD contracts and ru_legal_qa
  codes from ../shared/datasets, split into ~200-word chunks) with *random* unit vectors of the
  model's dimension. Exact dense search costs the same whatever the vector values, so this
  measures dense/BM25/fusion at scale without spending hours embedding; query embedding is
  measured on the real model in the first collection.

Usage::

    python benchmarks/latency.py --chunks 100000 [--queries 200]

Prints a Markdown table; the figures in docs/benchmarks.md come from this script.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from citewise.config import Settings
from citewise.eval.datasets import load_beir
from citewise.eval.run import build_index
from citewise.retrieve.retriever import Retriever
from citewise.store.sqlite import SQLiteStore
from citewise.text.analysis import analyze
from citewise.types import Chunk, Document

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
STAGES = ("embed_ms", "dense_ms", "sparse_ms", "fusion_ms", "load_ms", "rerank_ms")


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def measure(retriever: Retriever, queries: list[str]) -> dict[str, tuple[float, float]]:
    per_stage: dict[str, list[float]] = {s: [] for s in (*STAGES, "retrieval_ms", "total_ms")}
    for q in queries[:5]:  # warm up caches (matrix load, FTS pages)
        retriever.rank(q)
    for q in queries:
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        retriever.rank(q, timings=timings)
        total = (time.perf_counter() - t0) * 1000
        for s in STAGES:
            if s in timings:
                per_stage[s].append(timings[s])
        per_stage["total_ms"].append(total)
        per_stage["retrieval_ms"].append(total - timings.get("embed_ms", 0.0))
    return {s: (pct(v, 50), pct(v, 95)) for s, v in per_stage.items() if v}


def text_passages(limit: int):
    """Real text in ~200-word pieces from the shared datasets, cycling if needed."""
    sources: list[str] = []
    sci = load_beir(DATASETS / "scifact")
    sources += [f"{d.title}. {d.text}" for d in sci.corpus.values()]
    for folder in (DATASETS / "cuad" / "full_contract_txt", DATASETS / "ru_legal_qa"):
        for p in sorted(folder.rglob("*.txt"))[:600]:
            sources.append(p.read_text(encoding="utf-8", errors="replace"))
    pieces: list[str] = []
    for text in sources:
        words = text.split()
        pieces += [" ".join(words[i : i + 200]) for i in range(0, len(words), 200)]
    i = 0
    while len(pieces) < limit:
        pieces.append(pieces[i] + f" variant{i}")
        i += 1
    return pieces[:limit]


def write_synthetic(store, texts: list[str], dim: int, per_doc: int = 100,  # type: ignore[no-untyped-def]
                    progress: Callable[[int, float], None] | None = None) -> float:
    """Write ``texts`` into ``store`` (bound to a ``dim`` model) as documents of ``per_doc``
    chunks, streamed: one document's float32 (per_doc, dim) random unit vectors at a time
    (``default_rng(0)``, so the same vectors whatever the store). A repeated piece
    (``text + " variantN"``) is analysed as its original's terms plus ``analyze("variantN")``,
    which equals analysing it whole (see ``stores.corpus``). ``progress(chunks, seconds)`` is
    called every 100,000 chunks. Returns the seconds taken."""
    first: dict[str, str] = {}
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for d in range(0, len(texts), per_doc):
        part = texts[d : d + per_doc]
        terms = []
        for t in part:
            base, _, tail = t.rpartition(" variant")
            if tail.isdigit() and base in first:
                terms.append(f"{first[base]} {analyze('variant' + tail)}")
            else:
                terms.append(analyze(t))
            first.setdefault(t, terms[-1])
        doc = Document(id=f"doc{d}", path=f"synthetic/doc{d}.txt", source_path=f"synthetic:{d}",
                       title=f"doc{d}", format="text", content_hash=str(d))
        chunks = [Chunk(id=f"c{d + i}", document_id=doc.id, ordinal=i, text=t, source_text=t,
                        char_start=0, char_end=len(t), content_hash=f"h{d + i}")
                  for i, t in enumerate(part)]
        vecs = rng.normal(size=(len(part), dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        store.upsert_document(doc, chunks, vecs, terms)
        if progress is not None and d and d % 100_000 == 0:
            progress(d, time.perf_counter() - t0)
    return time.perf_counter() - t0


def build_synthetic(path: Path, n: int, dim: int, model: str) -> SQLiteStore:
    """The SQLite store at ``path`` holding ``n`` synthetic chunks (:func:`write_synthetic`
    of :func:`text_passages`), built unless it already holds ``n``."""
    store = SQLiteStore(path)
    if store.info().chunks == n:
        return store
    store.clear()
    store.bind_model(model, dim)
    write_synthetic(store, text_passages(n), dim)
    return store


def table(name: str, results: dict[str, tuple[float, float]]) -> str:
    rows = [f"| {name} | {stage.removesuffix('_ms')} | {p50:.1f} | {p95:.1f} |"
            for stage, (p50, p95) in results.items()]
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    settings = Settings()
    sci = load_beir(DATASETS / "scifact")
    queries = [q for _, q in sorted(sci.queries.items())][: args.queries]
    store, embedder = build_index(sci, settings, settings.embedding_model, settings.home / "eval")
    from citewise.retrieve.rerank import load_reranker

    reranker = load_reranker(settings.reranker_model, settings.threads)
    out = ["| collection | stage | p50 ms | p95 ms |", "|---|---|---|---|"]
    out.append(table(f"scifact ({store.info().chunks} chunks)",
                     measure(Retriever(settings, store, embedder, reranker), queries)))
    synth = build_synthetic(settings.home / "bench" / f"synthetic-{args.chunks}.sqlite3",
                            args.chunks, embedder.dim, embedder.name)
    out.append(table(f"synthetic ({synth.info().chunks} chunks)",
                     measure(Retriever(settings, synth, embedder, reranker), queries)))
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"model {embedder.name}, fusion {settings.fusion.value}, "
          f"reranker {settings.reranker_model or 'none'}")
    print("\n".join(out))


if __name__ == "__main__":
    random.seed(0)
    main()
