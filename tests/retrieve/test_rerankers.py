"""Rerankers through the conformance suite (tests/suites/reranker.py): the ONNX model shipped
in the package, and a sentence-transformers cross-encoder folder (trained here, slow)."""

from __future__ import annotations

import pytest

from citewise.retrieve.rerank import BUNDLED, CrossEncoderReranker, load_reranker, passage_text
from tests.suites.reranker import QUESTION, RerankerSuite


@pytest.mark.model
class TestBundledReranker(RerankerSuite):
    """``rerank_windows = "all"``: every window of a long passage is scored (MaxP)."""

    @pytest.fixture(scope="class")
    def reranker(self):
        return load_reranker(BUNDLED, threads=1, windows="all")


@pytest.mark.model
class TestBundledRerankerBestWindow(RerankerSuite):
    """The default, ``rerank_windows = "best"``, on two threads (pair-parallel runs): one
    window per long passage, the first unless a later one holds at least 2 more question
    terms (citewise.retrieve.rerank.best_windows)."""

    @pytest.fixture(scope="class")
    def reranker(self):
        reranker = load_reranker(BUNDLED, threads=2)
        assert reranker.windows == "best" and reranker.parallel == 2
        return reranker

    def test_a_passage_longer_than_the_input_is_scored_whole(self, reranker):
        """A fact in a later window counts when that window shares at least 2 more of the
        question's terms than the first; with only 1 more, the first window is read (the
        documented cost of one run per passage: docs/limitations.md)."""
        filler = " ".join(["The committee met on Tuesday and reviewed the minutes."] * 60)
        clear = passage_text("Report", (), filler + " Daily low-dose aspirin reduced the "
                             "risk of heart attack in adults.")  # aspirin reduc risk heart attack
        faint = passage_text("Report", (), filler + " Daily low-dose aspirin lowered the rate "
                             "of myocardial infarction in adults.")  # aspirin only
        plain = passage_text("Report", (), filler)
        scores = reranker.score(QUESTION, [clear, faint, plain])
        assert scores[0] > scores[2] + 1.0  # the window holding the fact was read
        assert scores[1] == scores[2]  # the same first window was read for both
        every = load_reranker(BUNDLED, threads=1, windows="all").score(QUESTION, [faint, plain])
        assert every[0] > every[1]  # "all" reads the faint one's fact too


class TestCrossEncoderReranker(RerankerSuite):
    """``cross_encoder_path`` (tests/retrieve/conftest.py) marks these model and slow."""

    @pytest.fixture
    def reranker(self, cross_encoder_path):
        reranker = load_reranker(str(cross_encoder_path), threads=1)
        assert isinstance(reranker, CrossEncoderReranker)
        return reranker
