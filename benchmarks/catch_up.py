"""The SQLite store's BM25 index after a write: caught up from the chunk log vs rebuilt from
every row (issue 22), in one run, on the same file.

Data: ``benchmarks/stores.py``'s corpus (N chunks of real text, 100 per document, random unit
384-d vectors, analysed terms cached under ``--work``); the first N - 100 chunks are written
once into ``<work>/catch-up-N.sqlite3`` (reused when it holds that many). Queries: SciFact
test queries, analysed by :func:`citewise.text.analysis.tokenize`.

For each write (``add``: one more 100-chunk document, the corpus's last; ``delete``: that
document deleted again, so the file ends as it began) made by a second store object (as
another process would):

* ``new process``: a new store object answers its first BM25 top-50 search: it maps the
  saved files of the generation before the write (what a restart after a crash between the
  commit and the save finds) and catches up from them and the log, then saves;
* the saved folder of the new generation is deleted, then ``catch-up``: the store object
  that kept the index of the generation before the write answers its first BM25 top-50
  search: the index caught up from the kept one and the log, and saved;
* that folder deleted again, ``rebuild``: a new store object (``bm25_catch_up = False``,
  ``bm25_build="wait"``) answers its first search: the index built from every row and
  saved (what every first search after a write cost before the catch-up);
* the top 50 (ids, order, scores) of all three for ``--queries`` queries, compared.

Usage::

    python benchmarks/catch_up.py --chunks 100000 [--queries 200] [--work DIR]

Prints a Markdown table and the load average (``os.getloadavg``); docs/benchmarks.md records
it.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from latency import DATASETS  # noqa: E402
from stores import PER_DOC, K, corpus, ingest, load, note  # noqa: E402

from citewise.eval.datasets import load_beir  # noqa: E402
from citewise.store.derived_files import derived_folder  # noqa: E402
from citewise.store.sqlite import SQLiteStore  # noqa: E402
from citewise.text.analysis import tokenize  # noqa: E402


def first_search(store: SQLiteStore, query: list[str]) -> float:
    """Seconds the store's first BM25 top-K search takes (the index load included)."""
    t0 = time.perf_counter()
    store.sparse_search(query, K)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "citewise-bench")
    args = ap.parse_args()
    note("start")
    n = args.chunks
    texts, terms, vecs = corpus(n, args.work)
    base_n = n - PER_DOC
    path = args.work / f"catch-up-{n}.sqlite3"
    writer = SQLiteStore(path)
    if writer.info().chunks != base_n:
        writer.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        shutil.rmtree(derived_folder(path), ignore_errors=True)
        writer = SQLiteStore(path)
        rate = ingest(writer, texts[:base_n], terms[:base_n], vecs[:base_n])
        note(f"ingested {base_n} chunks at {rate:,.0f} chunks/s")
    sci = load_beir(DATASETS / "scifact")
    queries = [tokenize(q) for _, q in sorted(sci.queries.items())][: args.queries]

    kept = SQLiteStore(path, bm25_build="wait")  # the process that keeps its index
    t = first_search(kept, queries[0])
    note(f"index of generation {kept.generation()} loaded in {t:.1f} s ({dict(kept.bm25_loads)})")

    rows = []
    for write in ("add", "delete"):
        if write == "add":
            ingest(writer, texts, terms, vecs, start=base_n)
        else:
            assert writer.delete_document(f"doc{base_n}")
        generation = writer.generation()
        saved_g = derived_folder(path) / f"bm25-{writer._meta('index_id')}-g{generation}"
        # a new process (a restart after a crash before the derived files of the write were
        # saved): it maps the files of the generation before and catches up from them
        restarted = SQLiteStore(path, bm25_build="wait")
        t_restart = first_search(restarted, queries[0])
        assert restarted.bm25_loads == {"caught_up": 1}, restarted.bm25_loads
        note(f"{write}: new process caught up from the saved files in {t_restart:.2f} s")
        shutil.rmtree(saved_g)
        before = dict(kept.bm25_loads)
        t_catch_up = first_search(kept, queries[0])
        assert kept.bm25_loads["caught_up"] == before.get("caught_up", 0) + 1, kept.bm25_loads
        note(f"{write}: caught up in {t_catch_up:.2f} s")
        shutil.rmtree(saved_g)
        rebuilt = SQLiteStore(path, bm25_build="wait")
        rebuilt.bm25_catch_up = False
        t_rebuild = first_search(rebuilt, queries[0])
        assert rebuilt.bm25_loads == {"built": 1}, rebuilt.bm25_loads
        note(f"{write}: rebuilt in {t_rebuild:.2f} s")
        same = sum(
            [(h.chunk_id, h.score) for h in kept.sparse_search(q, K)]
            == [(h.chunk_id, h.score) for h in rebuilt.sparse_search(q, K)]
            == [(h.chunk_id, h.score) for h in restarted.sparse_search(q, K)]
            for q in queries)
        rows.append((write, kept.info().chunks, t_rebuild, t_catch_up, t_restart, same))
        rebuilt.close()
        restarted.close()
    writer.close()
    kept.close()

    print(f"# {platform.machine()}, {len(queries)} SciFact queries; end "
          f"{time.strftime('%H:%M:%S')} {load()}")
    print()
    print("| write | chunks after | first BM25 search (s): rebuild | catch-up (kept index) | "
          "catch-up / rebuild | new process, catch-up from saved files | its / rebuild | "
          "identical top 50 (ids, order, scores) |")
    print("|---|---|---|---|---|---|---|---|")
    for write, chunks, t_rebuild, t_catch_up, t_restart, same in rows:
        print(f"| {write} one {PER_DOC}-chunk document | {chunks:,} | {t_rebuild:.2f} | "
              f"{t_catch_up:.2f} | {t_catch_up / t_rebuild:.3f} | {t_restart:.2f} | "
              f"{t_restart / t_rebuild:.3f} | {same} / {len(queries)} |")


if __name__ == "__main__":
    main()
