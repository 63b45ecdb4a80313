"""A collection sharded across PostgreSQL servers (``ShardedPostgresStore``), on real servers:
two started on their own ports (``postgres_shard_server_urls`` in tests/conftest.py, from
``CITEWISE_TEST_POSTGRES_SHARD_URLS`` under ``.ci/run``). The store conformance suite, BM25
rankings equal to one server's and the SQLite store's on SciFact, stable placement, the
recorded shard order, and a shard that is down."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from citewise.api.errors import status_for
from citewise.config import Settings
from citewise.errors import ConfigError, ShardUnavailableError
from citewise.store.base import BulkLoading, FileBacked, SelfChecking
from citewise.store.factory import open_location, open_store
from citewise.store.postgres import PostgresStore
from citewise.store.sharded import ShardedPostgresStore, jump_hash, shard_of
from citewise.store.sqlite import SQLiteStore
from citewise.text.analysis import analyze, tokenize
from tests import pgserver
from tests.conftest import DATASETS, drop_database, fresh_database
from tests.store.test_postgres import _scifact, _stats_are_consistent, _write
from tests.suites.store import DIM, StoreSuite, make_doc, unit

ROOT = Path(__file__).resolve().parents[2]


class TestShardedStore(StoreSuite):
    @pytest.fixture
    def store(self, postgres_shard_urls):
        s = ShardedPostgresStore(postgres_shard_urls)
        yield s
        s.close()

    def opener(self, store) -> str:
        return f"ShardedPostgresStore({store.urls!r})"

    def test_optional_capabilities(self, store):
        assert isinstance(store, BulkLoading)
        assert not isinstance(store, FileBacked) and not isinstance(store, SelfChecking)

    def test_documents_are_spread_over_both_servers(self, store):
        for i in range(20):
            self.add(store, f"spread{i}.txt", [f"note {i}"])
        per_shard = [len(s.documents()) for s in store.shards]
        assert sum(per_shard) == 20 and min(per_shard) >= 4, per_shard
        for s_index, shard in enumerate(store.shards):
            assert all(shard_of(d.id, 2) == s_index for d in shard.documents())
        assert [d.path for d in store.documents()] == sorted(f"col/spread{i}.txt"
                                                             for i in range(20))


class TestShardedStoreBM25Index(TestShardedStore):
    """The whole suite again with BM25 from each shard's in-memory index, scored with the
    global statistics."""

    @pytest.fixture
    def store(self, postgres_shard_urls):
        s = ShardedPostgresStore(postgres_shard_urls, bm25_index=True, bm25_build="wait")
        yield s
        s.close()

    def opener(self, store) -> str:
        return f"ShardedPostgresStore({store.urls!r}, bm25_index=True, bm25_build='wait')"


def _same_ranking(got, want_wide, k):
    """``got`` (k best) ranks as ``want_wide`` (more than k of one store, best first): the
    same scores to the last bit, and within each run of equal scores ids of that run (shards
    order equal scores by shard, one server by insertion)."""
    want = want_wide[:k]
    assert [h.sparse for h in got] == [h.sparse for h in want]
    by_score: dict[float, set[str]] = {}
    for h in want_wide:
        by_score.setdefault(h.sparse, set()).add(h.chunk_id)
    for h in got:
        assert h.chunk_id in by_score[h.sparse], h


@pytest.mark.slow
def test_bm25_rankings_equal_one_server_and_the_sqlite_store_on_scifact(
        postgres_shard_urls, postgres_url, tmp_path):
    """400 SciFact abstracts (1,375 chunks) written to two shards, one server and the SQLite
    store, then 40 deleted and 40 rewritten: for 300 queries the sharded top 10 and top 50
    have the scores of one server to the last bit (and its ids up to the order among equal
    scores), with and without a filter, and term statistics are the same; each shard's own
    statistics stay exact."""
    sharded = ShardedPostgresStore(postgres_shard_urls)
    one, lite = PostgresStore(postgres_url), SQLiteStore(tmp_path / "i.sqlite3")
    stores = (sharded, one, lite)
    for s in stores:
        s.bind_model("m", DIM)
    rng = np.random.default_rng(0)
    collection = _scifact(400)
    for doc, chunks in collection:
        _write(stores, doc, chunks, rng)
    for doc, _ in collection[::10]:
        assert all(s.delete_document(doc.id) for s in stores)
    for doc, chunks in collection[5::10]:
        _write(stores, doc, [c for c in chunks if c.ordinal != 1], rng)
    assert sharded.info().chunks == one.info().chunks == lite.info().chunks == 1228
    assert min(s.info().chunks for s in sharded.shards) > 400
    for shard in sharded.shards:
        _stats_are_consistent(shard)
    with (DATASETS / "scifact" / "queries.jsonl").open() as f:
        queries = [json.loads(line)["text"] for line, _ in zip(f, range(300), strict=False)]
    some_docs = {"document_ids": [d.id for d, _ in collection[1:60:3]]}
    compared = 0
    for q in queries:
        terms = tokenize(q)
        assert sharded.term_document_frequencies(terms) == one.term_document_frequencies(terms)
        wide = one.sparse_search(terms, 80)
        _same_ranking(sharded.sparse_search(terms, 10), wide, 10)
        _same_ranking(sharded.sparse_search(terms, 50), wide, 50)
        _same_ranking(sharded.sparse_search(terms, 10), lite.sparse_search(terms, 80), 10)
        _same_ranking(sharded.sparse_search(terms, 10, some_docs),
                      one.sparse_search(terms, 80, some_docs), 10)
        compared += bool(wide)
    assert compared >= 295
    for s in stores:
        s.close()


def test_dense_merge_is_the_best_k_of_every_shard(postgres_shard_urls):
    """Exact dense answers (a filter of few documents makes each shard scan): the merged top
    10 is numpy's exact top 10 over both shards, cosines included; unfiltered HNSW recall
    stays high."""
    dim, rng = 16, np.random.default_rng(3)
    store = ShardedPostgresStore(postgres_shard_urls)
    store.bind_model("m", dim)
    vecs = rng.normal(size=(600, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for d in range(30):
        doc, chunks, _ = make_doc(f"v{d}.txt", [f"t{d} {i}" for i in range(20)])
        store.upsert_document(doc, chunks, vecs[d * 20:(d + 1) * 20])
    ids = [f"v{d}.txt-{i}" for d in range(30) for i in range(20)]
    recalls = []
    for q in rng.normal(size=(20, dim)).astype(np.float32):
        q /= np.linalg.norm(q)
        exact = np.argsort(-(vecs @ q))[:10]
        hits = store.dense_search(q, 10)
        recalls.append(len({ids[i] for i in exact} & {h.chunk_id for h in hits}) / 10)
        np.testing.assert_allclose([h.dense for h in hits],
                                   sorted((vecs @ q)[[ids.index(h.chunk_id) for h in hits]],
                                          reverse=True), atol=1e-5)
        few = [f"id-v{d}.txt" for d in (1, 2, 7, 12, 20, 29)]
        allowed = [i for i, c in enumerate(ids) if f"id-{c.rsplit('-', 1)[0]}" in few]
        want = sorted(allowed, key=lambda i: -(vecs[i] @ q))[:10]
        got = store.dense_search(q, 10, {"document_ids": few})
        assert [h.chunk_id for h in got] == [ids[i] for i in want]
    assert {shard_of(d, 2) for d in few} == {0, 1}
    assert np.mean(recalls) >= 0.9
    store.close()


def test_placement_is_stable_across_processes_and_moves_little_when_growing():
    ids = [f"doc-{i}" for i in range(2000)]
    here = [shard_of(i, 2) for i in ids]
    code = ("from citewise.store.sharded import shard_of\n"
            f"print(','.join(str(shard_of(f'doc-{{i}}', 2)) for i in range({len(ids)})))")
    other = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                           text=True, cwd=ROOT, env={"PYTHONHASHSEED": "123", "PYTHONPATH": str(
                               ROOT / "src")}).stdout.strip()
    assert [int(x) for x in other.split(",")] == here
    # pinned values: a change of the hash would misplace every document already stored
    assert here[:12] == [0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 1]
    assert [shard_of(x, 3) for x in "abcdefgh"] == [0, 0, 2, 0, 1, 2, 2, 2]
    assert [jump_hash(k, 1) for k in (0, 1, 2**63)] == [0, 0, 0]
    assert 0.45 < np.mean(here) < 0.55
    three = [shard_of(i, 3) for i in ids]
    moved = [(a, b) for a, b in zip(here, three, strict=True) if a != b]
    assert all(b == 2 for _, b in moved)  # growing moves documents only to the new shard
    assert 0.28 < len(moved) / len(ids) < 0.39


def test_shard_order_and_membership_are_checked(postgres_shard_urls, postgres_url):
    store = ShardedPostgresStore(postgres_shard_urls)
    store.bind_model("m", DIM)
    doc, chunks, vecs = make_doc("a.txt", ["some text"])
    store.upsert_document(doc, chunks, vecs)
    store.close()
    with pytest.raises(ConfigError, match=r"listed 1 of 2 .* is shard 2/2 of this collection"):
        ShardedPostgresStore(postgres_shard_urls[::-1])
    third = postgres_url  # an empty database on a third server
    with pytest.raises(ConfigError, match=r"listed 3 of 3 .*is not a shard of this collection"):
        ShardedPostgresStore([*postgres_shard_urls, third])
    with pytest.raises(ConfigError, match="listed twice"):
        ShardedPostgresStore([third, third])
    unsharded = PostgresStore(third)
    unsharded.bind_model("m", DIM)
    unsharded.upsert_document(*make_doc("b.txt", ["other text"]))
    unsharded.close()
    empty = fresh_database(postgres_shard_urls[0].rsplit("/", 1)[0] + "/postgres")
    try:
        with pytest.raises(ConfigError, match=r"holds an index that is not sharded; copy it "
                           "with citewise migrate"):
            ShardedPostgresStore([third, empty])
    finally:
        drop_database(empty)
    others = [fresh_database(u.rsplit("/", 1)[0] + "/postgres") for u in postgres_shard_urls]
    try:
        other = ShardedPostgresStore(others)
        other.bind_model("m", DIM)
        for i in range(6):
            other.upsert_document(*make_doc(f"o{i}.txt", ["text"]))
        other.close()
        with pytest.raises(ConfigError, match=r"listed 2 of 2 .* another sharded collection"):
            ShardedPostgresStore([postgres_shard_urls[0], others[1]])
    finally:
        for url in others:
            drop_database(url)
    reopened = ShardedPostgresStore(postgres_shard_urls)  # the recorded order: fine
    assert [d.id for d in reopened.documents()] == [doc.id]
    reopened.close()


def test_settings_and_factory_open_a_sharded_store(postgres_shard_urls, tmp_path):
    settings = Settings(home=tmp_path, postgres_shards=",".join(postgres_shard_urls),
                        hnsw_ef_search=200)
    store = open_store(settings)
    assert isinstance(store, ShardedPostgresStore) and store.ef_search == 200
    assert store.info().location.startswith("2 PostgreSQL shards: ")
    assert settings.sessions_database == postgres_shard_urls[0]
    store.close()
    located = open_location(",".join(postgres_shard_urls))
    assert isinstance(located, ShardedPostgresStore)
    located.close()
    with pytest.raises(ConfigError, match="both set"):
        open_store(Settings(home=tmp_path, store=postgres_shard_urls[0],
                            postgres_shards=postgres_shard_urls))
    with pytest.raises(ValueError, match="two or more"):
        Settings(home=tmp_path, postgres_shards=postgres_shard_urls[0])
    with pytest.raises(ValueError, match="shard 2 is not a postgresql"):
        Settings(home=tmp_path, postgres_shards=f"{postgres_shard_urls[0]},/tmp/x.sqlite3")


def test_a_shard_that_is_down_fails_every_search_naming_it(postgres_server_url):
    """Shard 2 on a server of its own, stopped: searches, listings and writes raise
    ShardUnavailableError naming shard 2 and its address, never an answer from shard 1 alone;
    nothing is written; after the restart everything works again."""
    down = pgserver.start()
    try:
        pgserver.wait_ready(down.url)
        urls = [fresh_database(postgres_server_url), down.url]
        store = ShardedPostgresStore(urls)
        store.bind_model("m", DIM)
        docs = [make_doc(f"d{i}.txt", [f"lighthouse keeper {i}"], [unit(1, i)]) for i in range(8)]
        for doc, chunks, vecs in docs:
            store.upsert_document(doc, chunks, vecs, [analyze(c.text) for c in chunks])
        assert {store.shard_of(d.id) for d, _, _ in docs} == {0, 1}
        assert len(store.sparse_search(tokenize("lighthouse"), 10)) == 8
        down.stop(delete=False)
        named = rf"shard 2 of 2 of the sharded index \(postgresql://postgres@127.0.0.1:{down.port}"
        for call in (lambda: store.sparse_search(tokenize("lighthouse"), 10),
                     lambda: store.dense_search(unit(1), 10),
                     store.documents, store.info,
                     lambda: store.get_chunks(["d0.txt-0"])):
            with pytest.raises(ShardUnavailableError, match=named):
                call()
        home1 = next(d for d, _, _ in docs if store.shard_of(d.id) == 0)
        new, chunks, vecs = make_doc(home1.path.rsplit("/", 1)[1], ["rewritten text"])
        with pytest.raises(ShardUnavailableError, match=named):
            store.upsert_document(new, chunks, vecs)
        assert [c.text for c in store.shards[0].chunks_of(home1.id)] != ["rewritten text"]
        with pytest.raises(ShardUnavailableError, match=named) as refused:
            ShardedPostgresStore(urls)
        assert "CITEWISE_STORE" not in str(refused.value)  # the setting is the shards one
        assert "CITEWISE_POSTGRES_SHARDS" in str(refused.value)
        # the HTTP API answers 503 (a server is down: retry), not IndexError_'s 409 conflict
        assert status_for(refused.value) == 503
        down.restart()
        pgserver.wait_ready(down.url)
        assert len(store.sparse_search(tokenize("lighthouse"), 10)) == 8
        assert len(store.documents()) == 8
        store.close()
        drop_database(urls[0])
    finally:
        down.stop()


def test_a_new_id_for_the_same_file_replaces_the_copy_on_the_other_shard(postgres_shard_urls):
    """Upserting replaces a document of the same source path, as on one server, even when the
    new id's shard is not the old one's."""
    store = ShardedPostgresStore(postgres_shard_urls)
    store.bind_model("m", DIM)
    doc, chunks, vecs = make_doc("same.txt", ["old words"])
    store.upsert_document(doc, chunks, vecs)
    new_id = next(f"renamed-{i}" for i in range(100)
                  if shard_of(f"renamed-{i}", 2) != store.shard_of(doc.id))
    moved = type(doc)(**{**doc.__dict__, "id": new_id})
    new_chunks = [type(c)(**{**c.__dict__, "id": "moved-0", "document_id": new_id})
                  for c in chunks]
    store.upsert_document(moved, new_chunks, vecs)
    assert [d.id for d in store.documents()] == [new_id]
    assert [h.chunk_id for h in store.sparse_search(tokenize("old words"), 5)] == ["moved-0"]
    store.close()


def test_migrate_copies_a_sqlite_index_into_shards(postgres_shard_urls, tmp_path):
    """``citewise migrate --to URL1,URL2``: every document lands on its shard, with the same
    BM25 scores as the source (bulk path: each shard's HNSW index rebuilt at the end)."""
    from citewise.store.copy import copy_index

    lite = SQLiteStore(tmp_path / "i.sqlite3")
    lite.bind_model("m", DIM)
    rng = np.random.default_rng(5)
    for doc, chunks in _scifact(30):
        _write((lite,), doc, chunks, rng)
    target = open_location(",".join(postgres_shard_urls))
    assert isinstance(target, ShardedPostgresStore)
    copy_index(lite, target)
    assert target.unfinished() is None
    assert [d.id for d in target.documents()] == [d.id for d in lite.documents()]
    for shard_index, shard in enumerate(target.shards):
        assert shard.db.execute("SELECT count(*) FROM pg_indexes WHERE indexname = "
                                "'chunks_embedding_hnsw'").fetchone()[0] == 1
        assert {target.shard_of(d.id) for d in shard.documents()} == {shard_index}
    terms = tokenize("cell differentiation")
    assert [(h.chunk_id, h.sparse) for h in target.sparse_search(terms, 10)] == [
        (h.chunk_id, h.sparse) for h in lite.sparse_search(terms, 10)] != []
    target.close()
    lite.close()
