"""Every answerer through the conformance suite (tests/suites/answerer.py), over the same real
evidence: the extractive answerer and the sentence quote (no LLM), the LLM writer and the
pick-then-quote answerer on the bundled 0.5B model (``llm``), both falling back on failing
servers."""

from __future__ import annotations

import pytest

from citewise.answer.extractive import ExtractiveAnswerer, quote_stream
from citewise.answer.llm import LLMAnswerer
from citewise.answer.pick import PickAnswerer
from tests.suites.answerer import AnswererSuite, ProviderAnswererSuite


class QuoteAnswerer:
    """:func:`quote_stream` (a function) as an Answerer: the sentence evidence quoted."""

    def stream(self, question, evidence, history=()):
        return quote_stream(question, evidence)


class TestExtractiveAnswerer(AnswererSuite):
    @pytest.fixture
    def make_answerer(self, embedder):
        return lambda question, evidence, provider: ExtractiveAnswerer(embedder)


class TestQuoteStream(AnswererSuite):
    @pytest.fixture
    def make_answerer(self):
        return lambda question, evidence, provider: QuoteAnswerer()


def _fallback(question, evidence):
    """The quote the answer service falls back to for sentence evidence."""
    return lambda: quote_stream(question, evidence)


class TestLLMAnswerer(ProviderAnswererSuite):
    @pytest.fixture
    def make_answerer(self, embedder):
        def make(question, evidence, provider):
            return LLMAnswerer(provider, _fallback(question, evidence),
                               count_tokens=embedder.count_tokens)

        return make


class TestPickAnswerer(ProviderAnswererSuite):
    @pytest.fixture
    def make_answerer(self, embedder):
        def make(question, evidence, provider):
            return PickAnswerer(provider, _fallback(question, evidence), style="pick",
                                count_tokens=embedder.count_tokens)

        return make
