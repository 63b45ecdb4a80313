"""Conformance suite for the Answerer contract (citewise.answer.answerer.Answerer).

An answerer streams status and token events, then exactly one DoneEvent; the tokens shown
(those after the last ``fallback`` status: clients discard what came before) join to the
answer's text; every ``[n]`` in the text is the number of a given passage and is in
``answer.cited``; a not-found answer carries no citations.

Every answerer's test class inherits :class:`AnswererSuite` (or :class:`ProviderAnswererSuite`
for answerers that call an LLM) and supplies one fixture, ``make_answerer``: a factory
``make_answerer(question, evidence, provider) -> Answerer`` (``provider`` is None for
answerers without one). The evidence is real: a small file ingested into a fresh index and
read as the engine reads it (``engine.answers.read``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import pytest

from citewise.answer.answerer import NOT_FOUND, Answerer
from citewise.answer.factory import open_provider
from citewise.answer.providers import ChatProvider
from citewise.config import Settings
from citewise.types import Answer, DoneEvent, Event, Evidence, StatusEvent, TokenEvent

QUESTION = "How long is the warranty on the Model K2 kettle?"
#: the warranty sentence carries the document's own reference mark "[7]", which an answer
#: must not pass on as a citation (only 1..n passages are given)
KETTLE = ("# Model K2 kettle\n\nThe Model K2 kettle is covered by a warranty of 24 months from "
          "the date of purchase [7]. Keep the receipt as proof of purchase.\n\n## Care\n\n"
          "Descale the kettle every four weeks with citric acid. Never immerse the base in "
          "water.\n")
TOASTER = ("# Toaster T1\n\nThe T1 toaster has six browning levels and a crumb tray that slides "
           "out from the back.\n")
MARKER = re.compile(r"\[\s*(\d+)\s*\]")
FENCE = re.compile(r"```.*?```", re.DOTALL)  # code quoted as code: its brackets are code

MakeAnswerer = Callable[[str, Sequence[Evidence], "ChatProvider | None"], Answerer]


def shown(events: Sequence[Event]) -> str:
    """The text a client shows: the tokens after the last ``fallback`` status."""
    text = ""
    for event in events:
        if isinstance(event, StatusEvent) and event.stage == "fallback":
            text = ""
        elif isinstance(event, TokenEvent):
            text += event.content
    return text


def check_events(events: Sequence[Event]) -> Answer:
    """The contract's shape of a stream; returns its answer."""
    assert events, "no events"
    assert isinstance(events[0], StatusEvent), events[0]
    done = [e for e in events if isinstance(e, DoneEvent)]
    assert len(done) == 1 and events[-1] is done[0], [type(e).__name__ for e in events]
    assert all(isinstance(e, StatusEvent | TokenEvent) for e in events[:-1])
    return done[0].answer


def check_citations(answer: Answer, evidence: Sequence[Evidence]) -> None:
    """``[n]`` markers name given passages and are cited; a not-found answer cites nothing."""
    markers = {int(n) for n in MARKER.findall(FENCE.sub("", answer.text))}
    if not answer.found:
        assert answer.citations == () and answer.cited == () and not markers, answer
        return
    given = {ev.citation.n for ev in evidence}
    assert [c.n for c in answer.citations] == sorted(given)  # the passages given, in order
    assert markers, f"a found answer without a citation: {answer.text!r}"
    assert markers <= given, (markers, given)
    assert markers <= set(answer.cited), (markers, answer.cited)
    assert set(answer.cited) <= given, (answer.cited, given)


class AnswererSuite:
    #: ``answer.mode`` of an answer that did not fall back
    mode = "extractive"

    @pytest.fixture
    def make_answerer(self) -> MakeAnswerer:  # pragma: no cover - each answerer overrides it
        raise NotImplementedError

    @pytest.fixture
    def provider(self) -> ChatProvider | None:
        return None

    @pytest.fixture
    def evidence(self, make_engine, tmp_path) -> list[Evidence]:
        """The evidence the engine reads for :data:`QUESTION` from two small real files."""
        folder = tmp_path / "kitchen"
        folder.mkdir()
        (folder / "kettle.md").write_text(KETTLE, encoding="utf-8")
        (folder / "toaster.md").write_text(TOASTER, encoding="utf-8")
        engine = make_engine()
        engine.ingest([folder])
        reading = engine.answers.read(QUESTION, engine.search_evidence(QUESTION))
        assert reading.declined is None and reading.evidence
        return reading.evidence

    def ask(self, make_answerer, provider, question, evidence, history=()) -> list[Event]:
        return list(make_answerer(question, evidence, provider).stream(question, evidence,
                                                                       history))

    def test_events_are_statuses_and_tokens_then_one_done(self, make_answerer, provider,
                                                          evidence):
        answer = check_events(self.ask(make_answerer, provider, QUESTION, evidence))
        assert answer.question == QUESTION
        assert answer.mode == self.mode and answer.fallback_reason is None, answer

    def test_the_shown_tokens_are_the_answer_text(self, make_answerer, provider, evidence):
        events = self.ask(make_answerer, provider, QUESTION, evidence)
        answer = check_events(events)
        assert shown(events) == answer.text and answer.text.strip()

    def test_the_answer_cites_given_passages_by_number(self, make_answerer, provider,
                                                        evidence):
        answer = check_events(self.ask(make_answerer, provider, QUESTION, evidence))
        assert answer.found, answer.text
        check_citations(answer, evidence)
        cited = [answer.citations[n - 1] for n in answer.cited]
        assert any(c.path.endswith("kettle.md") for c in cited), cited

    def test_history_keeps_the_contract(self, make_answerer, provider, evidence):
        history = [("What does the T1 toaster have?", "Six browning levels [1].")]
        events = self.ask(make_answerer, provider, QUESTION, evidence, history)
        answer = check_events(events)
        assert shown(events) == answer.text
        check_citations(answer, evidence)

    def test_without_evidence_the_answer_is_not_found(self, make_answerer, provider):
        events = self.ask(make_answerer, provider, QUESTION, [])
        answer = check_events(events)
        assert not answer.found and NOT_FOUND in answer.text, answer
        assert shown(events) == answer.text
        check_citations(answer, [])


class ProviderAnswererSuite(AnswererSuite):
    """Answerers that call an LLM: the real bundled 0.5B model answers (``llm_settings``:
    these tests are ``llm``), and a failing server makes them fall back to the quote."""

    mode = "llm"

    @pytest.fixture
    def provider(self, llm_settings, tmp_path) -> ChatProvider | None:
        return open_provider(Settings(home=tmp_path / "home", **llm_settings))

    @pytest.fixture
    def broken(self, broken_server, tmp_path) -> Callable[[str], ChatProvider]:
        """``broken(mode)``: a provider on the misbehaving server in that mode."""

        def make(mode: str) -> ChatProvider:
            broken_server.mode = mode
            provider = open_provider(Settings(
                home=tmp_path / "home", llm_provider="llamacpp", llm_base_url=broken_server.url,
                llm_model="broken", llm_timeout=10.0))
            assert provider is not None
            return provider

        return make

    @pytest.mark.parametrize("mode", ["500", "401", "empty", "cut", "garbage"])
    def test_a_failing_provider_falls_back_to_the_quote(self, make_answerer, broken,
                                                        broken_server, evidence, mode):
        events = self.ask(make_answerer, broken(mode), QUESTION, evidence)
        answer = check_events(events)
        assert broken_server.requests >= 1
        assert answer.mode == "extractive" and answer.fallback_reason, answer
        falls = [e for e in events if isinstance(e, StatusEvent) and e.stage == "fallback"]
        assert len(falls) == 1 and answer.fallback_reason in falls[0].message
        assert shown(events) == answer.text and answer.found
        check_citations(answer, evidence)
        assert "Traceback" not in answer.fallback_reason

