"""Conformance suite for the Store contract (citewise.store.base.Store).

Every backend's test class inherits :class:`StoreSuite` and supplies one ``store`` fixture
returning an empty store; the tests below must pass unchanged for every backend.
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest

from citewise.errors import AnalyzerMismatchError, EmbeddingMismatchError
from citewise.text.analysis import analyze, tokenize
from citewise.types import Chunk, Document

DIM = 8


def unit(*values: float) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


def make_doc(name: str, texts: list[str], vectors: list[np.ndarray] | None = None):
    doc = Document(id=f"id-{name}", path=f"col/{name}", source_path=f"/abs/col/{name}",
                   title=name, format="text", content_hash=f"h-{name}-{hash(tuple(texts))}")
    chunks = [
        Chunk(id=f"{name}-{i}", document_id=doc.id, ordinal=i, text=t, source_text=t,
              char_start=0, char_end=len(t), content_hash=f"c-{name}-{t}", token_count=len(t.split()))
        for i, t in enumerate(texts)
    ]
    if vectors is None:
        rng = np.random.default_rng(len(name))
        vectors = [unit(*rng.normal(size=DIM)) for _ in texts]
    return doc, chunks, np.stack(vectors) if texts else np.zeros((0, DIM), np.float32)


def write_in_subprocess(opener: str, script: str) -> None:
    """Run ``script`` in a new Python process with ``store`` bound to ``opener`` (a Python
    expression opening the same index) and the helpers of this module importable; fails
    the test when the process exits with an error (the exit status 137 of a SIGKILL is not
    one)."""
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("import os, signal\nfrom citewise.store.sqlite import SQLiteStore\n"
            "from citewise.store.postgres import PostgresStore\n"
            "from citewise.store.sharded import ShardedPostgresStore\n"
            "from citewise.text.analysis import analyze\n"
            "from tests.suites.store import make_doc\n"
            f"store = {opener}\n" + textwrap.dedent(script))
    done = subprocess.run([sys.executable, "-c", code], check=False, cwd=root,
                          capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(root / "src"), str(root)])})
    assert done.returncode in (0, -9), done.stderr


class StoreSuite:
    @pytest.fixture
    def store(self):  # pragma: no cover - each backend overrides this
        raise NotImplementedError

    def opener(self, store) -> str:  # pragma: no cover - each backend overrides this
        """A Python expression that opens the index ``store`` is on, in another process."""
        raise NotImplementedError

    def add(self, store, name, texts, vectors=None):
        doc, chunks, vecs = make_doc(name, texts, vectors)
        store.bind_model("test-model", DIM)
        store.upsert_document(doc, chunks, vecs, [analyze(t) for t in texts])
        return doc

    def test_empty_store_searches_return_nothing(self, store):
        assert store.dense_search(unit(1), 5) == []
        assert store.sparse_search(["refund"], 5) == []
        assert store.sparse_search([], 5) == []
        assert store.info().chunks == 0

    def test_upsert_then_dense_search_ranks_by_cosine(self, store):
        self.add(store, "a.txt", ["alpha", "beta", "gamma"],
                 [unit(1, 0), unit(0.8, 0.6), unit(0, 1)])
        hits = store.dense_search(unit(1, 0), 3)
        assert [h.chunk_id for h in hits] == ["a.txt-0", "a.txt-1", "a.txt-2"]
        assert hits[0].dense == pytest.approx(1.0, abs=1e-6)
        assert hits[1].dense == pytest.approx(0.8, abs=1e-6)
        assert all(h.source == "dense" for h in hits)

    def test_sparse_search_ranks_matching_chunk_first(self, store):
        self.add(store, "weather.txt", ["Oslo weather is cold and rainy in November"])
        self.add(store, "canteen.txt", ["The canteen serves lunch; the weather does not matter"])
        hits = store.sparse_search(tokenize("Oslo weather"), 5)
        assert hits[0].chunk_id == "weather.txt-0"
        assert hits[0].sparse > hits[1].sparse > 0

    def test_term_in_half_of_a_tiny_collection_still_scores(self, store):
        """Case C39: a term in N/2 chunks keeps a positive IDF (smoothed IDF)."""
        self.add(store, "a.txt", ["keyword1 appears here"])
        self.add(store, "b.txt", ["nothing relevant"])
        hits = store.sparse_search(tokenize("keyword1"), 5)
        assert [h.chunk_id for h in hits] == ["a.txt-0"]
        assert hits[0].sparse > 0.1

    def test_reupsert_replaces_all_chunks(self, store):
        doc = self.add(store, "pets.md", ["the cat Biscuit is fed at 08:00", "vet visit 11 April"])
        self.add(store, "pets.md", ["the cat Pepper is fed at 09:00"])
        assert [c.text for c in store.chunks_of(doc.id)] == ["the cat Pepper is fed at 09:00"]
        assert store.sparse_search(tokenize("Biscuit"), 5) == []
        assert store.sparse_search(tokenize("vet"), 5) == []
        assert store.info().chunks == 1
        assert len(store.dense_search(unit(1), 10)) == 1

    def test_delete_removes_dense_and_sparse_entries(self, store):
        doc = self.add(store, "marigold.txt", ["Project Marigold launches on 14 March SILVERFINCH"])
        before = store.info().chunks
        assert store.delete_document(doc.id) is True
        assert store.delete_document(doc.id) is False
        assert store.sparse_search(tokenize("SILVERFINCH"), 5) == []
        assert store.dense_search(unit(1), 5) == []
        assert store.info().chunks == before - 1
        assert store.document(doc.id) is None

    def test_search_sees_a_second_process_write_and_delete(self, store):
        """A search after another process committed a write finds the new chunks and never
        the deleted ones, though this store object was told nothing (its in-memory search
        structures were built before)."""
        self.add(store, "old.txt", ["an old note about the lighthouse"])
        assert [h.chunk_id for h in store.sparse_search(tokenize("lighthouse"), 5)] == ["old.txt-0"]
        write_in_subprocess(self.opener(store), """
            doc, chunks, vecs = make_doc("new.txt", ["the lighthouse keeper's QUILLWORT log"])
            store.bind_model("test-model", 8)
            store.upsert_document(doc, chunks, vecs, [analyze(c.text) for c in chunks])
            store.delete_document("id-old.txt")
        """)
        assert [h.chunk_id for h in store.sparse_search(tokenize("lighthouse"), 5)] == ["new.txt-0"]
        assert [h.chunk_id for h in store.sparse_search(tokenize("quillwort"), 5)] == ["new.txt-0"]
        assert [h.chunk_id for h in store.dense_search(unit(1), 5)] == ["new.txt-0"]

    def test_process_killed_right_after_its_commit_leaves_searches_current(self, store):
        """A writer killed (SIGKILL) right after its commit, before anything else could run:
        the next search here sees exactly the committed state, old chunks gone."""
        self.add(store, "v.txt", ["first version mentions BARNACLE"])
        assert store.sparse_search(tokenize("barnacle"), 5)
        write_in_subprocess(self.opener(store), """
            doc, chunks, vecs = make_doc("v.txt", ["second version mentions PERIWINKLE"])
            store.bind_model("test-model", 8)
            store.upsert_document(doc, chunks, vecs, [analyze(c.text) for c in chunks])
            os.kill(os.getpid(), signal.SIGKILL)
        """)
        assert store.sparse_search(tokenize("barnacle"), 5) == []
        assert [h.chunk_id for h in store.sparse_search(tokenize("periwinkle"), 5)] == ["v.txt-0"]

    def test_get_chunks_returns_chunk_and_document(self, store):
        doc = self.add(store, "x.txt", ["hello"])
        got = store.get_chunks(["x.txt-0", "missing"])
        assert list(got) == ["x.txt-0"]
        chunk, document = got["x.txt-0"]
        assert chunk.text == "hello" and document.id == doc.id and document.path == "col/x.txt"

    def test_get_chunks_without_texts_reads_the_keys_and_whole_documents(self, store):
        doc = self.add(store, "k.txt", ["first passage here", "second passage there"])
        full = store.get_chunks(["k.txt-1", "k.txt-0", "missing"])
        keys = store.get_chunks(["k.txt-1", "k.txt-0", "missing"], texts=False)
        assert set(keys) == set(full) == {"k.txt-0", "k.txt-1"}
        for cid, (chunk, document) in keys.items():
            stored, stored_doc = full[cid]
            assert stored.text and (chunk.text, chunk.source_text) == ("", "")
            assert (chunk.id, chunk.document_id, chunk.ordinal, chunk.language) == (
                stored.id, stored.document_id, stored.ordinal, stored.language)
            assert (chunk.char_start, chunk.char_end, chunk.section) == (0, 0, ())
            assert document == stored_doc and document.id == doc.id

    def test_cached_vectors_by_content_hash(self, store):
        self.add(store, "v.txt", ["one"], [unit(0, 0, 1)])
        cached = store.cached_vectors(["c-v.txt-one", "nope"])
        assert list(cached) == ["c-v.txt-one"]
        np.testing.assert_allclose(cached["c-v.txt-one"], unit(0, 0, 1))

    def test_model_mismatch_is_refused(self, store):
        self.add(store, "m.txt", ["text"])
        with pytest.raises(EmbeddingMismatchError, match="citewise reindex"):
            store.bind_model("other-model", DIM)
        with pytest.raises(EmbeddingMismatchError):
            store.bind_model("test-model", DIM * 2)

    def test_filters_restrict_both_legs(self, store):
        a = self.add(store, "a.txt", ["shared words here"], [unit(1)])
        self.add(store, "b.txt", ["shared words here"], [unit(1)])
        f = {"document_ids": [a.id]}
        assert [h.chunk_id for h in store.dense_search(unit(1), 5, f)] == ["a.txt-0"]
        assert [h.chunk_id for h in store.sparse_search(tokenize("shared"), 5, f)] == ["a.txt-0"]
        with pytest.raises(ValueError, match="unknown filter"):
            store.dense_search(unit(1), 5, {"colour": "red"})

    def test_collections_filter_applies_before_top_k(self, store):
        """A collection-private document is never returned to a search limited to other
        collections, and the filter comes before ranking: the private chunks score best, yet
        the filtered top k is still k chunks of the readable collection."""
        from dataclasses import replace

        store.bind_model("test-model", DIM)
        for name, collection, first in (("secret.txt", "hr", 1.0), ("open.txt", "public", 0.5)):
            texts = [f"refund policy {name} part {i}" for i in range(4)]
            doc, chunks, _ = make_doc(name, texts)
            vecs = np.stack([unit(first - 0.01 * i, 0.1) for i in range(4)])
            store.upsert_document(replace(doc, collection=collection), chunks, vecs,
                                  [analyze(t) for t in texts])
        public = {"collections": ["public"]}
        dense = store.dense_search(unit(1, 0.1), 3, public)
        sparse = store.sparse_search(tokenize("refund policy secret"), 3, public)
        for hits in (dense, sparse):
            assert [h.chunk_id.split("-")[0] for h in hits] == ["open.txt"] * 3
        assert store.dense_search(unit(1, 0.1), 1)[0].chunk_id == "secret.txt-0"
        assert store.dense_search(unit(1), 5, {"collections": []}) == []
        assert store.sparse_search(["refund"], 5, {"collections": []}) == []
        both = store.dense_search(unit(1, 0.1), 8, {"collections": ["public", "hr"]})
        assert len(both) == 8
        assert store.document("id-secret.txt").collection == "hr"
        assert {d.collection for d in store.documents()} == {"hr", "public"}
        with pytest.raises(ValueError, match="collections"):
            store.dense_search(unit(1), 5, {"collections": "public"})

    def scoped_corpus(self, store):
        """Three documents with paths and metadata; the HR handbook's chunks score best."""
        store.bind_model("test-model", DIM)
        specs = (("hr/handbook.md", {"author": "Ana Diaz", "tags": ["hr", "policy"],
                                      "draft": False}, 1.0),
                 ("hr/old/handbook-2019.md", {"author": "Ben", "draft": True}, 0.8),
                 ("eng/guides/deploy.rst", {"author": "ana diaz", "year": 2024}, 0.6))
        for path, metadata, first in specs:
            texts = [f"refund policy {path} part {i}" for i in range(3)]
            doc, chunks, _ = make_doc(path.replace("/", "_"), texts)
            vecs = np.stack([unit(first - 0.01 * i, 0.1) for i in range(3)])
            store.upsert_document(replace(doc, path=path, metadata=metadata), chunks, vecs,
                                  [analyze(t) for t in texts])

    @staticmethod
    def files_of(hits):
        return sorted({h.chunk_id.rsplit("-", 1)[0] for h in hits})

    def test_paths_filter_matches_globs_on_both_legs_before_top_k(self, store):
        self.scoped_corpus(store)
        terms = tokenize("refund policy")
        for paths, want in (
                (["*.rst"], ["eng_guides_deploy.rst"]),
                (["hr/*.md"], ["hr_handbook.md"]),
                (["hr/**/*.md"], ["hr_handbook.md", "hr_old_handbook-2019.md"]),
                (["old"], ["hr_old_handbook-2019.md"]),  # a folder name anywhere
                (["guides/", "hr/handbook.md"], ["eng_guides_deploy.rst", "hr_handbook.md"]),
                (["/eng/**"], ["eng_guides_deploy.rst"]),
                (["/guides"], []),  # anchored: no path starts with guides
                (["handbook-20??.md"], ["hr_old_handbook-2019.md"]),
                (["hand*"], ["hr_handbook.md", "hr_old_handbook-2019.md"])):
            f = {"paths": paths}
            for hits in (store.dense_search(unit(1, 0.1), 9, f),
                         store.sparse_search(terms, 9, f)):
                assert self.files_of(hits) == want, (paths, hits)
            # k=3 with the best chunks outside the scope: still 3 chunks of the scope
            for hits in (store.dense_search(unit(1, 0.1), 3, f),
                         store.sparse_search(terms, 3, f)):
                assert set(self.files_of(hits)) <= set(want), (paths, hits)
                assert len(hits) == (3 if want else 0)

    def test_where_filter_matches_metadata_fields_on_both_legs(self, store):
        self.scoped_corpus(store)
        terms = tokenize("refund policy")
        for where, want in (
                ({"author": "ANA DIAZ"}, ["eng_guides_deploy.rst", "hr_handbook.md"]),
                ({"author": "Ana Diaz", "tags": "policy"}, ["hr_handbook.md"]),
                ({"tags": ["nope", "hr"]}, ["hr_handbook.md"]),
                ({"draft": True}, ["hr_old_handbook-2019.md"]),
                ({"draft": "false"}, ["hr_handbook.md"]),
                ({"year": 2024}, ["eng_guides_deploy.rst"]),
                ({"year": "2024"}, ["eng_guides_deploy.rst"]),
                ({"title": "hr_handbook.md"}, ["hr_handbook.md"]),  # a document field
                ({"year": {"gte": 2024}}, ["eng_guides_deploy.rst"]),
                ({"year": {"gt": 2024}}, []),
                ({"year": {"gt": "987"}}, ["eng_guides_deploy.rst"]),  # as numbers
                ({"author": {"gte": "b", "lt": "c"}}, ["hr_old_handbook-2019.md"]),
                ({"author": "Nobody"}, []),
                ({"missing": "x"}, [])):
            f = {"where": where}
            for hits in (store.dense_search(unit(1, 0.1), 9, f),
                         store.sparse_search(terms, 9, f)):
                assert self.files_of(hits) == want, (where, hits)
        both = {"where": {"author": "ana diaz"}, "paths": ["hr/**"]}
        assert self.files_of(store.dense_search(unit(1), 9, both)) == ["hr_handbook.md"]

    def test_scope_filters_follow_writes_and_refuse_bad_input(self, store):
        self.scoped_corpus(store)
        f = {"where": {"author": "Ben"}}
        assert self.files_of(store.dense_search(unit(1), 9, f)) == ["hr_old_handbook-2019.md"]
        store.delete_document("id-hr_old_handbook-2019.md")
        assert store.dense_search(unit(1), 9, f) == []
        for bad, field in (({"paths": "*.md"}, "paths"), ({"paths": [""]}, "paths"),
                           ({"where": {"_root": "/x"}}, "where"), ({"where": ["a"]}, "where"),
                           ({"where": {"author": []}}, "where"),
                           ({"where": {"year": {"after": 1}}}, "where"),
                           ({"where": {"year": {}}}, "where"),
                           ({"language": ["en"]}, "language")):
            with pytest.raises(ValueError, match=f"filter '{field}'"):
                store.dense_search(unit(1), 5, bad)
            with pytest.raises(ValueError, match=f"filter '{field}'"):
                store.sparse_search(["refund"], 5, bad)

    def test_chunk_language_round_trips_and_filters_both_legs(self, store):
        doc, chunks, vecs = make_doc("l.txt", ["срок гарантии", "warranty period"],
                                     [unit(1), unit(1)])
        chunks = [replace(chunks[0], language="ru"), replace(chunks[1], language="en")]
        store.bind_model("test-model", DIM)
        store.upsert_document(doc, chunks, vecs, [analyze(c.text) for c in chunks])
        assert store.languages() == {"ru": 1, "en": 1}
        loaded = store.get_chunks(["l.txt-0", "l.txt-1"])
        assert loaded["l.txt-0"][0].language == "ru"
        assert [c.language for c in store.export(doc.id)[0]] == ["ru", "en"]
        ru = {"language": "ru"}
        assert [h.chunk_id for h in store.dense_search(unit(1), 5, ru)] == ["l.txt-0"]
        assert store.sparse_search(tokenize("warranty"), 5, ru) == []
        assert [h.chunk_id for h in store.sparse_search(tokenize("гарантия"), 5, ru)] == [
            "l.txt-0"]

    def test_analyzer_version_is_recorded_and_a_mismatch_refused(self, store):
        assert store.stored_analyzer() is None
        store.bind_analyzer("2")
        self.add(store, "a.txt", ["text"])
        store.bind_analyzer("2")  # the same version: fine
        assert store.stored_analyzer() == "2"
        with pytest.raises(AnalyzerMismatchError, match="citewise reindex"):
            store.bind_analyzer("3")
        store.bind_analyzer("3", force=True)  # after re-analysing every chunk
        assert store.stored_analyzer() == "3"
        store.clear()
        assert store.stored_analyzer() is None

    def test_shape_mismatch_is_rejected(self, store):
        doc, chunks, vecs = make_doc("s.txt", ["a", "b"])
        store.bind_model("test-model", DIM)
        with pytest.raises(ValueError, match="shape"):
            store.upsert_document(doc, chunks, vecs[:1])

    def test_terms_and_vectors_by_chunk_id(self, store):
        self.add(store, "t.txt", ["Running cats"], [unit(0, 1)])
        assert store.terms_of(["t.txt-0", "nope"]) == {"t.txt-0": frozenset({"run", "cat"})}
        np.testing.assert_allclose(store.vectors_of(["t.txt-0"])["t.txt-0"], unit(0, 1))
        # the float32 bits written come back, whatever the wire format (PostgreSQL: binary)
        odd = np.random.default_rng(3).normal(size=DIM).astype(np.float32)
        odd /= np.linalg.norm(odd)
        doc = self.add(store, "o.txt", ["Odd bits"], [odd])
        back = store.vectors_of(["o.txt-0"])["o.txt-0"]
        assert back.dtype == np.float32 and back.tobytes() == odd.tobytes()
        (_, _, features), = store.chunk_features(doc.id)
        assert features.dtype == np.float32 and features.tobytes() == odd.tobytes()

    def test_term_incidence_equals_the_stored_terms_and_vectors(self, store):
        """``document_incidence`` and ``chunk_incidence`` (what the retriever's coverage and
        within-document step read) hold exactly what ``chunk_features``, ``terms_of`` and
        ``vectors_of`` hold, after writes, a replacement and a delete: both right after the
        write (an index a backend derived from the state before must not answer) and after a
        search (which builds whatever a backend answers them from)."""
        terms = [*tokenize("running cats and mice"), "nowhere-term", "cat", ""]
        query = np.random.default_rng(7).normal(size=DIM).astype(np.float32)
        query /= np.linalg.norm(query)

        def check(doc_ids: list[str], chunk_ids: list[str]) -> None:
            compare(doc_ids, chunk_ids)
            store.sparse_search(tokenize("cats"), 5)
            compare(doc_ids, chunk_ids)

        def compare(doc_ids: list[str], chunk_ids: list[str]) -> None:
            for doc_id in doc_ids:
                features = store.chunk_features(doc_id)
                got = store.document_incidence(doc_id, terms, vectors=True)
                assert got.chunk_ids == tuple(f[0] for f in features)
                assert got.terms == tuple(terms)
                assert got.present.dtype == np.bool_
                assert got.present.tolist() == [[t in f[1] for t in terms] for f in features]
                assert got.vectors is not None and got.vectors.dtype == np.float32
                assert got.vectors.shape == (len(features), DIM)
                for row, f in zip(got.vectors, features, strict=True):
                    assert row.tobytes() == np.asarray(f[2], dtype=np.float32).tobytes()
                assert store.document_incidence(doc_id, terms).vectors is None
                # with a query vector: the inner products, computed where the vectors are
                want = np.array([np.asarray(f[2], dtype=np.float32) @ query for f in features],
                                dtype=np.float32).reshape(-1)
                for keep in (False, True):
                    scored = store.document_incidence(doc_id, terms, vectors=keep, query=query)
                    assert scored.chunk_ids == got.chunk_ids
                    assert scored.present.tolist() == got.present.tolist()
                    assert (scored.vectors is not None) is keep
                    assert scored.dots is not None and scored.dots.dtype == np.float32
                    assert scored.dots.shape == (len(features),)
                    np.testing.assert_allclose(scored.dots, want, rtol=0, atol=1e-6)
                assert got.dots is None
            # several documents at once (repeats and unknown ones included): what one call
            # per document gives, in the order asked
            asked = [*reversed(doc_ids), doc_ids[0]]
            for q in (None, query):
                many = store.documents_incidence(asked, terms, query=q)
                assert len(many) == len(asked)
                for doc_id, inc in zip(asked, many, strict=True):
                    one = store.document_incidence(doc_id, terms, query=q)
                    assert inc.chunk_ids == one.chunk_ids and inc.terms == one.terms
                    assert inc.present.tolist() == one.present.tolist()
                    assert inc.vectors is None
                    assert (inc.dots is None) is (q is None)
                    if q is not None:
                        assert inc.dots.tobytes() == one.dots.tobytes()
            assert store.documents_incidence([], terms) == []
            held, stored = store.terms_of(chunk_ids), store.vectors_of(chunk_ids)
            got = store.chunk_incidence(chunk_ids, terms, vectors=True)
            assert got.chunk_ids == tuple(c for c in dict.fromkeys(chunk_ids) if c in held)
            assert got.present.tolist() == [[t in held[c] for t in terms] for c in got.chunk_ids]
            assert got.vectors is not None and got.vectors.shape == (len(got.chunk_ids), DIM)
            for row, c in zip(got.vectors, got.chunk_ids, strict=True):
                assert row.tobytes() == np.asarray(stored[c], dtype=np.float32).tobytes()

        a = self.add(store, "a.txt", ["Running cats chase mice", "the mice hide", "dogs bark"])
        b = self.add(store, "b.txt", ["cats sleep all day", "a cat runs"])
        check([a.id, b.id, "no-such-document"],
              ["b.txt-1", "a.txt-0", "nope", "a.txt-0", "a.txt-2"])
        self.add(store, "a.txt", ["birds sing", "mice and cats"])  # replaced: 2 chunks now
        store.delete_document(b.id)
        c = self.add(store, "c.txt", ["running late", "cats again", "no terms here"])
        check([a.id, b.id, c.id], ["a.txt-0", "a.txt-2", "b.txt-0", "c.txt-1", "c.txt-0"])
        assert store.document_incidence(b.id, terms, vectors=True).vectors.shape == (0, DIM)
        assert store.chunk_incidence(["b.txt-0", "b.txt-1"], terms).chunk_ids == ()
        assert store.document_incidence(a.id, terms).present.tolist() == [
            [t in {"bird", "sing"} for t in terms], [t in {"mice", "cat"} for t in terms]]
        # the newest document replaced by one of as many chunks: SQLite reuses its rowids
        store.delete_document(c.id)
        d = self.add(store, "d.txt", ["mice everywhere", "no cats", "running cats"])
        check([c.id, d.id], ["c.txt-1", "d.txt-0", "d.txt-1", "d.txt-2"])

    def test_store_satisfies_the_protocol(self, store):
        from citewise.store.base import Store

        assert isinstance(store, Store)

    def test_failed_write_leaves_the_previous_version_whole(self, store):
        """A write that fails half-way (here: a duplicate chunk id) rolls back completely."""
        doc = self.add(store, "atomic.txt", ["old one", "old two"])
        _, chunks, vecs = make_doc("atomic.txt", ["new one", "new two"])
        broken = [chunks[0], chunks[1].__class__(**{**chunks[1].__dict__, "id": chunks[0].id})]
        with pytest.raises(Exception):  # noqa: B017 - each backend raises its own error type
            store.upsert_document(doc, broken, vecs)
        assert [c.text for c in store.chunks_of(doc.id)] == ["old one", "old two"]
        assert {h.chunk_id for h in store.sparse_search(tokenize("old"), 5)} == {
            "atomic.txt-0", "atomic.txt-1"}
        assert store.sparse_search(tokenize("new"), 5) == []
