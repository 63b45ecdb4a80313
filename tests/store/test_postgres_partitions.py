"""Partitioned tables: the store's code runs unchanged after an administrator hash-partitions
the BM25 tables by term (the procedure in docs/scaling.md), and still ranks exactly like the
SQLite store."""

from __future__ import annotations

import json

import numpy as np

from citewise.store.postgres import PostgresStore
from citewise.store.sqlite import SQLiteStore
from citewise.text.analysis import tokenize
from tests.conftest import DATASETS
from tests.store.test_postgres import _scifact, _stats_are_consistent, _write
from tests.suites.store import DIM

PARTITIONS = 4

#: docs/scaling.md, "Partitioned tables": postings and term_stats hash-partitioned by term.
PARTITION_SQL = [
    "ALTER TABLE postings RENAME TO postings_unpartitioned",
    "CREATE TABLE postings (LIKE postings_unpartitioned INCLUDING ALL) PARTITION BY HASH (term)",
    *(f"CREATE TABLE postings_{r} PARTITION OF postings FOR VALUES WITH "
      f"(MODULUS {PARTITIONS}, REMAINDER {r})" for r in range(PARTITIONS)),
    "INSERT INTO postings SELECT * FROM postings_unpartitioned",
    "DROP TABLE postings_unpartitioned",
    "ALTER TABLE term_stats RENAME TO term_stats_unpartitioned",
    ("CREATE TABLE term_stats (LIKE term_stats_unpartitioned INCLUDING ALL) "
     "PARTITION BY HASH (term)"),
    *(f"CREATE TABLE term_stats_{r} PARTITION OF term_stats FOR VALUES WITH "
      f"(MODULUS {PARTITIONS}, REMAINDER {r})" for r in range(PARTITIONS)),
    "INSERT INTO term_stats SELECT * FROM term_stats_unpartitioned",
    "DROP TABLE term_stats_unpartitioned",
]


def test_bm25_on_hash_partitioned_postings_equals_the_sqlite_store(postgres_url, tmp_path):
    pg, lite = PostgresStore(postgres_url), SQLiteStore(tmp_path / "i.sqlite3")
    stores = (pg, lite)
    for s in stores:
        s.bind_model("m", DIM)
    rng = np.random.default_rng(0)
    collection = _scifact(150)
    for doc, chunks in collection[:100]:  # some rows exist before partitioning: they move
        _write(stores, doc, chunks, rng)
    before = pg.db.execute("SELECT count(*) FROM postings").fetchone()[0]
    with pg.db.transaction():
        for sql in PARTITION_SQL:
            pg.db.execute(sql)
    pg.close()
    pg = PostgresStore(postgres_url)  # reopens: migrations recorded, nothing re-created
    stores = (pg, lite)
    kinds = dict(pg.db.execute("SELECT c.relname, c.relkind FROM pg_class c WHERE c.relname "
                               "IN ('postings', 'term_stats')").fetchall())
    assert kinds == {"postings": "p", "term_stats": "p"}  # p: partitioned table
    assert pg.db.execute("SELECT count(*) FROM postings").fetchone()[0] == before
    for doc, chunks in collection[100:]:
        _write(stores, doc, chunks, rng)
    for doc, _ in collection[::7]:
        assert pg.delete_document(doc.id) and lite.delete_document(doc.id)
    for doc, chunks in collection[3::7]:  # rewritten with one chunk fewer
        _write(stores, doc, chunks[:-1], rng)
    _stats_are_consistent(pg)
    per_partition = [pg.db.execute(f"SELECT count(*) FROM postings_{r}").fetchone()[0]
                     for r in range(PARTITIONS)]
    assert min(per_partition) > 0
    assert sum(per_partition) == pg.db.execute("SELECT count(*) FROM postings").fetchone()[0]
    assert pg.info().chunks == lite.info().chunks > 0
    with (DATASETS / "scifact" / "queries.jsonl").open() as f:
        queries = [json.loads(line)["text"] for line, _ in zip(f, range(100), strict=False)]
    compared = 0
    for q in queries:
        terms = tokenize(q)
        got, want = pg.sparse_search(terms, 10), lite.sparse_search(terms, 10)
        assert [(h.chunk_id, h.sparse) for h in got] == [(h.chunk_id, h.sparse) for h in want], q
        compared += bool(want)
    assert compared >= 90
    pg.close()
    lite.close()
