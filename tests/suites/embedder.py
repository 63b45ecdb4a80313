"""Conformance suite for the Embedder contract (citewise.embed.Embedder).

Every embedder's test class inherits :class:`EmbedderSuite` and supplies one ``embedder``
fixture (a loaded model; the name gives the test the ``model`` tier, see tests/conftest.py).
A class may loosen :attr:`EmbedderSuite.batch_cosine` where its model documents that a vector
depends slightly on the rest of its batch (dynamically quantised int8).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from citewise.embed import Embedder, load_embedder

QUESTION = "How long is the warranty on the Model K2 kettle?"
RELEVANT = ("The Model K2 kettle is covered by a warranty of 24 months from the date of "
            "purchase.")
PARAPHRASE = "The guarantee for the K2 kettle lasts two years after you buy it."
UNRELATED = "Basaltic lava flows cool slowly into hexagonal columns along the coast."
TEXTS = [RELEVANT, UNRELATED, "short", "Descale the kettle every four weeks with citric acid.",
         " ".join(["Invoices are paid within thirty days of receipt."] * 6)]
SENTENCE = ("Refunds for online orders are paid back to the original card within fourteen "
            "working days of the return being received at the warehouse")


def unit_rows(x: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(x, axis=-1), 1.0, atol=1e-4))


class EmbedderSuite:
    #: least cosine between a text's vector embedded alone and inside a mixed batch
    batch_cosine = 0.9999

    @pytest.fixture
    def embedder(self) -> Embedder:  # pragma: no cover - each embedder overrides this
        raise NotImplementedError

    def test_describes_itself(self, embedder):
        assert isinstance(embedder, Embedder)
        assert isinstance(embedder.name, str) and embedder.name
        assert isinstance(embedder.family, str) and embedder.family
        assert isinstance(embedder.dim, int) and embedder.dim > 0
        assert isinstance(embedder.max_tokens, int) and embedder.max_tokens > 0
        lo, hi = embedder.cosine_range
        assert -1.0 <= lo < hi <= 1.0

    def test_documents_are_unit_float32_rows_in_input_order(self, embedder):
        vectors = embedder.embed_documents(TEXTS)
        assert vectors.dtype == np.float32
        assert vectors.shape == (len(TEXTS), embedder.dim)
        assert np.isfinite(vectors).all() and unit_rows(vectors)
        # row i is text i: each text's own vector is its nearest row
        again = np.stack([embedder.embed_documents([t])[0] for t in TEXTS])
        assert list(np.argmax(again @ vectors.T, axis=1)) == list(range(len(TEXTS)))

    def test_query_is_one_unit_float32_vector(self, embedder):
        q = embedder.embed_query(QUESTION)
        assert q.dtype == np.float32 and q.shape == (embedder.dim,)
        assert np.isfinite(q).all() and unit_rows(q)

    def test_no_documents_give_an_empty_matrix(self, embedder):
        empty = embedder.embed_documents([])
        assert empty.dtype == np.float32 and empty.shape == (0, embedder.dim)

    def test_an_empty_string_still_embeds(self, embedder):
        vectors = embedder.embed_documents(["", RELEVANT])
        assert vectors.shape == (2, embedder.dim) and np.isfinite(vectors).all()

    def test_embedding_is_deterministic(self, embedder):
        np.testing.assert_allclose(embedder.embed_documents(TEXTS),
                                   embedder.embed_documents(TEXTS), atol=1e-6)
        np.testing.assert_allclose(embedder.embed_query(QUESTION),
                                   embedder.embed_query(QUESTION), atol=1e-6)

    def test_a_vector_does_not_depend_on_its_batch(self, embedder, monkeypatch):
        alone = embedder.embed_documents([UNRELATED])[0]
        batch = [RELEVANT, "x " * 200, UNRELATED, "short", *TEXTS[3:]]
        together = embedder.embed_documents(batch)
        assert float(alone @ together[2]) >= self.batch_cosine
        monkeypatch.setattr(embedder, "batch_size", 2)  # the same texts in batches of two
        split = embedder.embed_documents(batch)
        cos = np.sum(split * together, axis=1)
        assert cos.min() >= self.batch_cosine, cos

    def test_text_past_the_token_limit_embeds(self, embedder):
        long = " ".join(["kettle"] * (embedder.max_tokens + 64))
        assert embedder.count_tokens(long) > embedder.max_tokens
        vectors = embedder.embed_documents([long, RELEVANT])
        assert vectors.shape == (2, embedder.dim) and np.isfinite(vectors).all()
        assert unit_rows(vectors)
        q = embedder.embed_query(long)
        assert q.shape == (embedder.dim,) and unit_rows(q)

    def test_token_count_grows_with_the_text(self, embedder):
        words = SENTENCE.split()
        counts = [embedder.count_tokens(" ".join(words[:k])) for k in range(1, len(words) + 1)]
        assert all(isinstance(c, int) for c in counts)
        assert all(b > a for a, b in itertools.pairwise(counts)), counts
        assert counts[-1] >= len(words)

    def test_empty_text_counts_no_tokens(self, embedder):
        """count_tokens counts the text's tokens without special tokens: none for ''."""
        assert embedder.count_tokens("") == 0
        assert embedder.count_tokens("kettle") >= 1

    def test_a_question_is_nearer_its_answer_than_an_unrelated_passage(self, embedder):
        q = embedder.embed_query(QUESTION)
        relevant, unrelated = embedder.embed_documents([RELEVANT, UNRELATED])
        assert float(q @ relevant) > float(q @ unrelated) + 0.05
        lo, hi = embedder.cosine_range  # the range the not-found decision rescales by
        assert float(q @ relevant) > lo and float(q @ unrelated) < hi

    def test_a_paraphrase_is_nearer_than_an_unrelated_text(self, embedder):
        a, b, c = embedder.embed_documents([RELEVANT, PARAPHRASE, UNRELATED])
        assert float(a @ b) > float(a @ c) + 0.05

    def test_the_recorded_name_loads_the_same_model(self, embedder):
        """An index records ``name``; loading that name again (in the same precision, which
        the engine takes from the index for ``minilm``) gives the same vectors."""
        again = load_embedder(embedder.name, threads=1,
                              precision=getattr(embedder, "precision", "auto"))
        assert (again.name, again.dim, again.family) == (embedder.name, embedder.dim,
                                                         embedder.family)
        np.testing.assert_allclose(again.embed_documents([RELEVANT]),
                                   embedder.embed_documents([RELEVANT]), atol=1e-5)
