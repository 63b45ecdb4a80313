"""Rerankers through the conformance suite (tests/suites/reranker.py): the ONNX model shipped
in the package, and a sentence-transformers cross-encoder folder (trained here, slow)."""

from __future__ import annotations

import pytest

from citewise.retrieve.rerank import BUNDLED, CrossEncoderReranker, load_reranker
from tests.suites.reranker import RerankerSuite


@pytest.mark.model
class TestBundledReranker(RerankerSuite):
    @pytest.fixture(scope="class")
    def reranker(self):
        return load_reranker(BUNDLED, threads=1)


class TestCrossEncoderReranker(RerankerSuite):
    """``cross_encoder_path`` (tests/retrieve/conftest.py) marks these model and slow."""

    @pytest.fixture
    def reranker(self, cross_encoder_path):
        reranker = load_reranker(str(cross_encoder_path), threads=1)
        assert isinstance(reranker, CrossEncoderReranker)
        return reranker
