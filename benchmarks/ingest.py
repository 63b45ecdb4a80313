"""Ingest throughput (chunks/s) of the whole pipeline, against the bare model as baseline.

For each embedding model: ingest N CUAD contracts (real .txt files from ../shared/datasets/cuad)
into a fresh index with ``Engine.ingest``, then, in the same run, time the bare model encoding
the very same chunk texts (``embed_documents``). The ratio pipeline/bare shows what parsing,
chunking, BM25 analysis and the SQLite writes add on top of embedding. Then re-ingest the
unchanged folder (content-hash skip) and time that too.

Usage::

    python benchmarks/ingest.py --contracts 30 --models minilm,use
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from citewise.config import Settings
from citewise.engine import Engine
from citewise.ingest.chunking import embedding_text

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def contracts(n: int) -> list[Path]:
    files = sorted((DATASETS / "cuad" / "full_contract_txt").rglob("*.txt"))
    return [f for f in files if f.stat().st_size > 2000][:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--contracts", type=int, default=30)
    ap.add_argument("--models", default="minilm,use")
    args = ap.parse_args()
    print("| model | files | chunks | pipeline s | chunks/s | bare encode s | pipeline/bare "
          "| unchanged re-ingest s |")
    print("|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "cuad30"
            folder.mkdir()
            for f in contracts(args.contracts):
                shutil.copy2(f, folder / f.name)
            engine = Engine(Settings(home=Path(tmp) / "home", embedding_model=model))
            engine.embedder.embed_documents(["warm up"])
            t0 = time.perf_counter()
            report = engine.ingest([folder])
            pipeline = time.perf_counter() - t0
            texts = [embedding_text(d.title, c) for d in engine.store.documents()
                     for c in engine.store.chunks_of(d.id)]
            t0 = time.perf_counter()
            engine.embedder.embed_documents(texts)
            bare = time.perf_counter() - t0
            t0 = time.perf_counter()
            again = engine.ingest([folder])
            unchanged = time.perf_counter() - t0
            assert again.count("unchanged") == report.count("added")
            print(f"| {model} | {report.count('added')} | {len(texts)} | {pipeline:.1f} | "
                  f"{len(texts) / pipeline:.1f} | {bare:.1f} | {pipeline / bare:.2f} | "
                  f"{unchanged:.2f} |")


if __name__ == "__main__":
    main()
