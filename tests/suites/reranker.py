"""Conformance suite for the Reranker contract (citewise.retrieve.rerank.Reranker).

Every reranker's test class inherits :class:`RerankerSuite` and supplies one ``reranker``
fixture (a loaded model). Scores are logits: float32, shape (n,), higher is more relevant.
"""

from __future__ import annotations

import numpy as np
import pytest

from citewise.retrieve.rerank import Reranker, passage_text

QUESTION = "Does aspirin reduce the risk of heart attack?"
RELEVANT = passage_text("Aspirin", ("Cardiology",), "Daily low-dose aspirin lowered the rate "
                        "of myocardial infarction in adults at high cardiovascular risk.")
UNRELATED = passage_text("Volcanoes", (), "Basaltic lava flows cool slowly into hexagonal "
                         "columns along the coast.")
OTHERS = [
    passage_text("Kettle", (), "The Model K2 kettle is covered by a warranty of 24 months."),
    passage_text("Invoices", ("Payment",), "Invoices are paid within thirty days of receipt."),
    "short",
]


class RerankerSuite:
    @pytest.fixture
    def reranker(self) -> Reranker:  # pragma: no cover - each reranker overrides this
        raise NotImplementedError

    def test_is_a_named_reranker(self, reranker):
        assert isinstance(reranker, Reranker)
        assert isinstance(reranker.name, str) and reranker.name

    def test_one_float32_score_per_passage(self, reranker):
        passages = [RELEVANT, UNRELATED, *OTHERS]
        scores = reranker.score(QUESTION, passages)
        assert isinstance(scores, np.ndarray)
        assert scores.dtype == np.float32 and scores.shape == (len(passages),)
        assert np.isfinite(scores).all()

    def test_no_passages_give_no_scores(self, reranker):
        scores = reranker.score(QUESTION, [])
        assert scores.dtype == np.float32 and scores.shape == (0,)

    def test_the_relevant_passage_scores_above_an_unrelated_one(self, reranker):
        relevant, unrelated = reranker.score(QUESTION, [RELEVANT, UNRELATED])
        assert relevant > unrelated

    def test_a_score_does_not_depend_on_order_or_company(self, reranker):
        passages = [RELEVANT, UNRELATED, *OTHERS]
        scores = reranker.score(QUESTION, passages)
        reverse = reranker.score(QUESTION, passages[::-1])[::-1]
        np.testing.assert_allclose(reverse, scores, atol=1e-4)
        alone = np.array([reranker.score(QUESTION, [p])[0] for p in passages])
        np.testing.assert_allclose(alone, scores, atol=1e-4)

    def test_scoring_is_deterministic(self, reranker):
        passages = [RELEVANT, UNRELATED]
        np.testing.assert_array_equal(reranker.score(QUESTION, passages),
                                      reranker.score(QUESTION, passages))

    def test_a_passage_longer_than_the_input_is_scored_whole(self, reranker):
        """A fact past the model's input length still counts (long passages are read in
        windows): the relevant sentence at the end of a long passage lifts its score."""
        filler = " ".join(["The committee met on Tuesday and reviewed the minutes."] * 60)
        tail = passage_text("Report", (), filler + " Daily low-dose aspirin lowered the rate "
                            "of myocardial infarction in adults.")
        plain = passage_text("Report", (), filler)
        scores = reranker.score(QUESTION, [tail, plain, UNRELATED])
        assert scores.shape == (3,) and np.isfinite(scores).all()
        assert scores[0] > scores[1]
