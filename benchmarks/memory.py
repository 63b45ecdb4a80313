"""Memory and open time of a large SQLite index (issue 22, item 6).

Two steps, each its own command:

* ``build``: write N chunks into ``<work>/memory-N.sqlite3`` (the corpus of
  ``benchmarks/stores.py``: real ~200-word text pieces of SciFact, CUAD and ru_legal_qa, repeated
  with a ``variantN`` token past ~32,600, each with a random 384-d unit vector, 100 chunks a
  document), streamed so the script never holds more than the texts and their terms.
* ``measure``: in a fresh process per trial, open the store, run the first dense and the first
  BM25 search (the derived indexes are loaded or built then), then ``--queries`` more of each,
  and report the time to the first answer of each leg, the resident set (``VmRSS``: total and
  its anonymous / file-backed parts, from ``/proc/self/status``) and the peak (``VmHWM``).
  Trials: ``build`` (the derived files deleted first: what a process pays on a new
  generation), ``mapped`` (the files the build trial left: a restart), and with
  ``--baseline-python`` the same steps for another checkout (e.g. main, no derived files).
  Trials run in turn, ``--rounds`` times, so both see the same load.

Usage::

    python benchmarks/memory.py build --chunks 1000000 --work /tmp/citewise-mem
    python benchmarks/memory.py measure --chunks 1000000 --work /tmp/citewise-mem --rounds 2 \\
        [--baseline-src /work/main/src]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DIM, PER_DOC, K = 384, 100, 50


def note(message: str) -> None:
    print(f"# {time.strftime('%H:%M:%S')} load {' '.join(f'{x:.1f}' for x in os.getloadavg())}:"
          f" {message}", file=sys.stderr, flush=True)


def build(n: int, path: Path) -> None:
    """Write the ``stores.py`` corpus of ``n`` chunks into an SQLite store at ``path``."""
    sys.path[:0] = [str(ROOT / "benchmarks")]
    from latency import text_passages, write_synthetic

    from citewise.store.sqlite import SQLiteStore

    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    texts = text_passages(n)
    note(f"{len(texts):,} texts")
    store = SQLiteStore(path)
    store.bind_model("minilm", DIM)
    took = write_synthetic(store, texts, DIM, PER_DOC,
                           lambda d, s: note(f"{d:,} chunks, {d / s:,.0f} chunks/s"))
    store.close()
    note(f"wrote {n:,} chunks in {took:.0f} s; {path.stat().st_size / 1e6:,.0f} MB")


def status() -> dict[str, float]:
    """VmRSS, RssAnon, RssFile, VmHWM of this process, MB."""
    out: dict[str, float] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


def trial(path: Path, queries: int) -> dict[str, object]:
    """One trial in this process: open, first searches, more searches; figures as a dict."""
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    from latency import DATASETS

    from citewise.eval.datasets import load_beir
    from citewise.store.sqlite import SQLiteStore
    from citewise.text.analysis import tokenize

    sci = load_beir(DATASETS / "scifact")
    q_terms = [tokenize(q) for _, q in sorted(sci.queries.items())][: queries + 1]
    rng = np.random.default_rng(1)
    q_vecs = rng.normal(size=(queries + 1, DIM)).astype(np.float32)
    q_vecs /= np.linalg.norm(q_vecs, axis=1, keepdims=True)
    before = status()
    t0 = time.perf_counter()
    store = SQLiteStore(path, bm25_build="wait")
    opened = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.dense_search(q_vecs[0], K)
    first_dense = time.perf_counter() - t0
    after_dense = status()
    t0 = time.perf_counter()
    store.sparse_search(q_terms[0], K)
    first_sparse = time.perf_counter() - t0
    after_first = status()
    dense_ms, sparse_ms = [], []
    for qv, qt in zip(q_vecs[1:], q_terms[1:], strict=True):
        t0 = time.perf_counter()
        store.dense_search(qv, K)
        dense_ms.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        store.sparse_search(qt, K)
        sparse_ms.append((time.perf_counter() - t0) * 1e3)
    return {"open_s": opened, "first_dense_s": first_dense, "first_sparse_s": first_sparse,
            "before": before, "after_dense": after_dense, "after_first": after_first,
            "after_queries": status(),
            "dense_p50_ms": float(np.median(dense_ms)), "sparse_p50_ms": float(np.median(sparse_ms)),
            "load": os.getloadavg()}


def derived_dir(path: Path) -> Path:
    return path.with_name(path.name + ".derived")


def run_trial(python: str, src: str, path: Path, queries: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run([python, __file__, "trial", "--path", str(path), "--queries", str(queries)],
                         env=env, check=True, capture_output=True, text=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def measure(path: Path, rounds: int, queries: int, baseline_src: str | None) -> None:
    src = str(ROOT / "src")
    results: dict[str, list[dict[str, object]]] = {}
    for r in range(rounds):
        plan = [("build", src), ("mapped", src)]
        if baseline_src:
            plan.append(("baseline", baseline_src))
        for name, where in plan:
            if name == "build":
                shutil.rmtree(derived_dir(path), ignore_errors=True)
            res = run_trial(sys.executable, where, path, queries)
            results.setdefault(name, []).append(res)
            note(f"round {r} {name}: {json.dumps(res)}")
    print(json.dumps(results, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=["build", "measure", "trial"])
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/citewise-mem"))
    ap.add_argument("--path", type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--baseline-src", help="PYTHONPATH of a checkout to compare (e.g. main's src)")
    args = ap.parse_args()
    path = args.path or args.work / f"memory-{args.chunks}.sqlite3"
    if args.step == "build":
        args.work.mkdir(parents=True, exist_ok=True)
        build(args.chunks, path)
    elif args.step == "trial":
        print(json.dumps(trial(path, args.queries)))
    else:
        measure(path, args.rounds, args.queries, args.baseline_src)


if __name__ == "__main__":
    main()
