"""Dense search on the SQLite store: exact float32 scan vs int8 codes with exact re-scoring
(citewise.store.dense_index), recall on real embeddings and latency at 100k / 1M, in one run.

Recall (real embeddings, minilm through ``load_embedder``, cached in ``--work``):

* chunks: the 5,183 SciFact abstracts (title + text) and their sentences, the XQuAD en / ru /
  zh paragraphs and their sentences (sentences of 4 words or more); ~60k vectors;
* queries: the 1,109 SciFact claims and the 1,190 XQuAD questions of each of en, ru, zh,
  embedded with ``embed_query``;
* for each shortlist size, recall@10 and recall@50 of ``DenseIndex.top`` (int8) against
  exact search over the same vectors (``DenseMethod.EXACT``): the share of the exact top k
  returned, counting a returned chunk as right when its cosine is at least the exact k-th's
  minus 1e-6 (duplicate sentences are not misses); also with a filter keeping 1% of the
  chunks. The shortlist is also given as a share of the chunks, since at a fixed size the
  recall falls as the index grows: the default (``max(10 k, 100)``: 100 for a top 10) is
  0.15% of these chunks, 0.1% of 100k and 0.01% of 1M.

Latency (generated vectors: each a real chunk vector plus Gaussian noise, renormalised, so
there are near neighbours; 384-d float32): an SQLite store of ``--chunks`` chunks (100 per
document) written once into ``<work>/dense-N.sqlite3``; two ``SQLiteStore`` objects on that
file, ``dense_exact_below`` above N (exact, today's search) and the default (int8), answer
the same queries (real queries plus noise) in turn, top 50 (shortlist 500), without and with a
``document_ids`` filter keeping 1% of the chunks; p50 / p95 ms, the ratio to exact's p50, the
agreement of the int8 top 10 with exact's, the index build time and its bytes.

Usage::

    python benchmarks/dense_index.py --chunks 100000,1000000 [--queries 200] [--work DIR]

Run it alone (the ratios assume both methods saw the same load); it prints the load average
(``os.getloadavg``) at the start and end, and Markdown tables; docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from latency import DATASETS  # noqa: E402
from stores import load, pct  # noqa: E402

from citewise.store.dense_index import DenseIndex, DenseMethod  # noqa: E402
from citewise.store.sqlite import SQLiteStore  # noqa: E402
from citewise.types import Chunk, Document  # noqa: E402

DIM, PER_DOC, K = 384, 100, 50


def note(message: str) -> None:
    print(f"# {message} ({time.strftime('%H:%M:%S')}, {load()})", file=sys.stderr, flush=True)


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` (split after . ! ? or 。) with 4 words or 20 characters or more."""
    return [s for s in re.split(r"(?<=[.!?。])\s*", text) if len(s.split()) >= 4 or len(s) >= 20]


def real_embeddings(work: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(chunk vectors by part, query vectors by query set), float32 (n, 384) L2-normalised,
    embedded with minilm once and cached in ``work/dense-real.npz``."""
    path = work / "dense-real.npz"
    if not path.exists():
        from citewise.embed import load_embedder

        embedder = load_embedder("minilm", 2)
        sci = [json.loads(line) for line in
               (DATASETS / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
        docs = [f"{d['title']}. {d['text']}" for d in sci]
        texts = {"scifact-doc": docs, "scifact-sent": [s for t in docs for s in sentences(t)]}
        claims = (DATASETS / "scifact" / "queries.jsonl").read_text(encoding="utf-8")
        queries = {"scifact": [json.loads(line)["text"] for line in claims.splitlines()]}
        for lang in ("en", "ru", "zh"):
            data = json.loads((DATASETS / "xquad" / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]
            paragraphs = [p for a in data for p in a["paragraphs"]]
            texts[f"xquad-{lang}-par"] = [p["context"] for p in paragraphs]
            texts[f"xquad-{lang}-sent"] = [s for p in paragraphs for s in sentences(p["context"])]
            queries[f"xquad-{lang}"] = [q["question"] for p in paragraphs for q in p["qas"]]
        out = {f"q:{k}": np.stack([embedder.embed_query(q) for q in v]) for k, v in queries.items()}
        for k, v in texts.items():
            note(f"embedding {len(v)} {k}")
            out[f"c:{k}"] = embedder.embed_documents(v)
        work.mkdir(parents=True, exist_ok=True)
        np.savez(path, **{k: np.asarray(v, dtype=np.float32) for k, v in out.items()})
    data = np.load(path)
    return ({k[2:]: data[k] for k in data.files if k.startswith("c:")},
            {k[2:]: data[k] for k in data.files if k.startswith("q:")})


def recall_at(exact_scores: np.ndarray, got: np.ndarray, k: int) -> float:
    """Share of the exact top ``k`` found: returned float32 cosines ``got`` at least the exact
    k-th (sorted descending ``exact_scores``) minus 1e-6."""
    kth = exact_scores[min(k, exact_scores.shape[0]) - 1]
    return float(np.sum(got[:k] >= kth - 1e-6)) / min(k, exact_scores.shape[0])


def recall_table(chunks: dict[str, np.ndarray], queries: dict[str, np.ndarray],
                 shortlists: list[int], step: int) -> None:
    vectors = np.concatenate(list(chunks.values()))
    n = vectors.shape[0]
    rowids = np.arange(n, dtype=np.int64)
    t0 = time.perf_counter()
    base = DenseIndex.build(0, rowids, vectors, exact_below=0)
    build_s = time.perf_counter() - t0
    one_percent = np.arange(0, n, 100, dtype=np.int64)
    print(f"\n# recall: {n:,} real minilm chunk vectors ("
          + ", ".join(f"{k} {v.shape[0]:,}" for k, v in chunks.items())
          + f"); codes built in {build_s:.2f} s")
    print("\n| shortlist (share of chunks) | query set | recall@10 | recall@50 | "
          "recall@10, 1% filter | queries with recall@10 < 1 |\n|---|---|---|---|---|---|")
    exact: dict[str, list[np.ndarray]] = {}
    exact_f: dict[str, list[np.ndarray]] = {}
    queries = {name: qs[::step] for name, qs in queries.items()}
    for name, qs in queries.items():
        exact[name] = [base.top(q, K, method=DenseMethod.EXACT)[1] for q in qs]
        exact_f[name] = [base.top(q, 10, one_percent, method=DenseMethod.EXACT)[1] for q in qs]
    for size in shortlists:
        index = DenseIndex(0, rowids, vectors, base.scales, base.codes, rescore_factor=0,
                           rescore_min=size)
        all10: list[float] = []
        for name, qs in queries.items():
            r10, r50, rf, worse = [], [], [], 0
            for q, ex, exf in zip(qs, exact[name], exact_f[name], strict=True):
                got10 = index.top(q, 10)[1]
                r10.append(recall_at(ex, got10, 10))
                if size >= K:  # a smaller shortlist returns fewer than K
                    r50.append(recall_at(ex, index.top(q, K)[1], K))
                rf.append(recall_at(exf, index.top(q, 10, one_percent)[1], 10))
                worse += r10[-1] < 1
            all10 += r10
            print(f"| {size:,} ({size / n:.2%}) | {name} ({len(qs)}) | {np.mean(r10):.4f} | "
                  f"{np.mean(r50) if r50 else float('nan'):.4f} | {np.mean(rf):.4f} | {worse} |")
        print(f"| {size:,} ({size / n:.2%}) | all ({len(all10)}) | **{np.mean(all10):.4f}** "
              "| | | |")


def generated(real: np.ndarray, n: int, seed: int, noise: float = 0.05) -> np.ndarray:
    """float32 (n, dim) unit vectors: real rows (cycled) plus Gaussian noise of ``noise`` per
    dimension, renormalised."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    for start in range(0, n, 65_536):
        stop = min(n, start + 65_536)
        block = real[np.arange(start, stop) % real.shape[0]]
        block = block + rng.normal(0, noise, block.shape).astype(np.float32)
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def store_of(path: Path, vectors: np.ndarray) -> None:
    """Write ``vectors`` into an SQLite store at ``path`` (100 chunks a document), unless it
    already holds that many chunks."""
    n = vectors.shape[0]
    store = SQLiteStore(path)
    if store.info().chunks == n:
        store.close()
        return
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    store = SQLiteStore(path)
    store.bind_model("minilm", DIM)
    t0 = time.perf_counter()
    for d in range(0, n, PER_DOC):
        doc = Document(id=f"doc{d}", path=f"synthetic/doc{d}.txt", source_path=f"synthetic:{d}",
                       title=f"doc{d}", format="text", content_hash=str(d))
        part = range(d, min(n, d + PER_DOC))
        chunks = [Chunk(id=f"c{i}", document_id=doc.id, ordinal=i - d, text=f"chunk {i}",
                        source_text=f"chunk {i}", char_start=0, char_end=8,
                        content_hash=f"h{i}") for i in part]
        store.upsert_document(doc, chunks, vectors[d:d + PER_DOC], ["chunk"] * len(chunks))
    note(f"wrote {n:,} chunks at {n / (time.perf_counter() - t0):,.0f} chunks/s")
    store.close()


def latency_table(n: int, real: np.ndarray, real_queries: np.ndarray, n_queries: int,
                  work: Path) -> None:
    path = work / f"dense-{n}.sqlite3"
    store_of(path, generated(real, n, seed=n))
    exact = SQLiteStore(path, dense_exact_below=n + 1)
    coded = SQLiteStore(path)
    times_build = {}
    for name, store in (("exact", exact), ("int8", coded)):
        t0 = time.perf_counter()
        index = store._load_matrix()
        times_build[name] = (time.perf_counter() - t0, index.nbytes / 1e6)
    note(f"{n:,}: indexes loaded {times_build}")
    rng = np.random.default_rng(7)
    qs = generated(real_queries[rng.permutation(real_queries.shape[0])[:n_queries]],
                   n_queries, seed=1)
    filt = {"document_ids": [f"doc{d}" for d in range(0, n, PER_DOC)][::100]}
    systems = {"exact": lambda q: exact.dense_search(q, K),
               "int8": lambda q: coded.dense_search(q, K),
               "exact, 1% filter": lambda q: exact.dense_search(q, K, filt),
               "int8, 1% filter": lambda q: coded.dense_search(q, K, filt)}
    for fn in systems.values():
        for q in qs[:5]:
            fn(q)
    times: dict[str, list[float]] = {k: [] for k in systems}
    outs: dict[str, list[list[str]]] = {k: [] for k in systems}
    for q in qs:
        for name, fn in systems.items():
            t0 = time.perf_counter()
            hits = fn(q)
            times[name].append((time.perf_counter() - t0) * 1000)
            outs[name].append([h.chunk_id for h in hits])
    same10 = np.mean([a[:10] == b[:10] for a, b in zip(outs["int8"], outs["exact"],
                                                       strict=True)])
    overlap10 = np.mean([len(set(a[:10]) & set(b[:10])) / 10
                         for a, b in zip(outs["int8"], outs["exact"], strict=True)])
    same_f = np.mean([a == b for a, b in zip(outs["int8, 1% filter"],
                                             outs["exact, 1% filter"], strict=True)])
    base = pct(times["exact"], 50)
    print(f"\n# latency: {n:,} generated chunks x {DIM}-d, {n_queries} queries, top {K}; "
          f"exact index loaded in {times_build['exact'][0]:.1f} s "
          f"({times_build['exact'][1]:,.0f} MB), int8 in {times_build['int8'][0]:.1f} s "
          f"({times_build['int8'][1]:,.0f} MB); {time.strftime('%H:%M:%S')} {load()}")
    print("\n| dense top-50 | p50 ms | p95 ms | p50 / exact p50 |\n|---|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {pct(ts, 50):.2f} | {pct(ts, 95):.2f} | {pct(ts, 50) / base:.3f} |")
    print(f"\nint8 vs exact on these generated vectors: identical top 10 (ids, order) "
          f"{same10:.1%}, top-10 overlap {overlap10:.3f}; 1% filter identical top 50 {same_f:.1%}")
    exact.close()
    coded.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", default="100000", help="comma-separated store sizes")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--shortlists", default="10,20,50,100,500",
                    help="shortlist sizes for the recall table (the default for k 10: 100)")
    ap.add_argument("--query-step", type=int, default=1, help="recall on every Nth query")
    ap.add_argument("--no-recall", action="store_true")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "citewise-bench")
    args = ap.parse_args()
    note("start")
    chunks, queries = real_embeddings(args.work)
    print(f"# {platform.machine()}, {os.cpu_count()} cores; start {time.strftime('%H:%M:%S')} "
          f"{load()}")
    if not args.no_recall:
        recall_table(chunks, queries, [int(s) for s in args.shortlists.split(",")],
                     args.query_step)
        note("recall measured")
    real = np.concatenate(list(chunks.values()))
    real_queries = np.concatenate(list(queries.values()))
    for n in (int(s) for s in args.chunks.split(",") if s):
        latency_table(n, real, real_queries, args.queries, args.work)
        note(f"latency at {n:,} measured")
    print(f"\n# end {time.strftime('%H:%M:%S')} {load()}")


if __name__ == "__main__":
    main()
