"""The seed S0 stack on the same data as ``benchmarks/stores.py``: ChromaDB (persistent, HNSW,
cosine) for the vectors plus a pickled ``rank_bm25`` BM25Okapi index, as S0 runs them.

Runs in its own virtual environment (ChromaDB's dependencies are not citewise's), started by
``stores.py --s0-python PATH`` with the cached corpus; prints one JSON object of figures.
S0 tokenises BM25 text by lower-casing and splitting on whitespace, so its BM25 is not the same
ranking as citewise's; only the time is compared.

    python -m venv /tmp/s0venv && /tmp/s0venv/bin/pip install chromadb rank_bm25 numpy
    /tmp/s0venv/bin/python benchmarks/s0_stack.py CORPUS.pkl QUERIES.json WORKDIR
"""

from __future__ import annotations

import json
import pickle
import shutil
import sys
import time
from pathlib import Path

import numpy as np


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    corpus_path, queries_path, work = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    with corpus_path.open("rb") as f:
        texts, _terms, vecs = pickle.load(f)
    spec = json.loads(queries_path.read_text())
    queries, qvecs, k = spec["queries"], np.asarray(spec["qvecs"], dtype=np.float32), spec["k"]
    import chromadb
    from rank_bm25 import BM25Okapi

    folder = work / "s0"
    shutil.rmtree(folder, ignore_errors=True)
    client = chromadb.PersistentClient(path=str(folder / "chroma"))
    col = client.create_collection("chunks", metadata={"hnsw:space": "cosine"})
    ids = [f"c{i}" for i in range(len(texts))]
    t0 = time.perf_counter()
    batch = 5000
    for i in range(0, len(texts), batch):
        col.add(ids=ids[i:i + batch], embeddings=vecs[i:i + batch],
                documents=texts[i:i + batch])
    bm25 = BM25Okapi([t.lower().split() for t in texts])
    with (folder / "bm25.pkl").open("wb") as f:
        pickle.dump(bm25, f)
    ingest_s = time.perf_counter() - t0
    with (folder / "bm25.pkl").open("rb") as f:
        bm25 = pickle.load(f)

    exact = [set(np.argsort(-(vecs @ q))[:k].tolist()) for q in qvecs]

    def dense(q: np.ndarray) -> list[str]:
        return col.query(query_embeddings=[q], n_results=k, include=["distances"])["ids"][0]

    def sparse(q: str) -> list[int]:
        scores = bm25.get_scores(q.lower().split())
        return np.argsort(-scores)[:k].tolist()

    for q in qvecs[:5]:
        dense(q)
    d_times, recalls = [], []
    for i, q in enumerate(qvecs):
        t = time.perf_counter()
        got = dense(q)
        d_times.append((time.perf_counter() - t) * 1000)
        recalls.append(len(exact[i] & {int(c[1:]) for c in got}) / k)
    s_times, h_times = [], []
    for i, q in enumerate(queries):
        t = time.perf_counter()
        sparse(q)
        s_times.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()  # S0's hybrid: both legs, union and dedup, chunks loaded
        found = list(dict.fromkeys([*dense(qvecs[i % len(qvecs)]), *[f"c{j}" for j in sparse(q)]]))
        col.get(ids=found, include=["documents"])
        h_times.append((time.perf_counter() - t) * 1000)
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(json.dumps({
        "ingest": len(texts) / ingest_s, "dense": [pct(d_times, 50), pct(d_times, 95)],
        "recall": float(np.mean(recalls)), "bm25": [pct(s_times, 50), pct(s_times, 95)],
        "retrieval": [pct(h_times, 50), pct(h_times, 95)], "bytes": size,
    }))


if __name__ == "__main__":
    main()
