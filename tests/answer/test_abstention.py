"""Near-miss questions: about a topic the documents cover, with an answer they do not hold.

Their words match the topic's sentences (the bridge, its deck, its construction), so the
coverage rule alone lets them through and the extractive answer quoted an unrelated sentence
with a citation. The floor on the best sentence's match (``abstain_min_match``, chosen on
benchmarks/abstention.py's dev articles) declines them; the questions the text answers are still answered.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from citewise.answer.selection import (
    MIN_ANSWER_MATCH,
    Candidate,
    Scored,
    answer_match,
    answerable,
)

BRIDGE = """# Riverside Bridge

The Riverside Bridge crosses the Elm River between the old town and the harbour district. It
opened to traffic in May 1932, after four years of construction by the Northern Steel Company.

## Structure

The bridge is 420 metres long and rests on two steel arches. Its deck carries four lanes for
cars and a separate path for cyclists and pedestrians.

## Traffic

About 30,000 vehicles cross the bridge on a working day. Lorries heavier than 40 tonnes must
use the ring road instead.

## Maintenance

The city inspects the arches every two years. The deck was resurfaced in 2005, and the lamps
were replaced with LED lights in 2018.
"""

# each shares a quarter or more of its content words with a sentence of the text (so the
# coverage rule let it through), and none of its three best sentences matches closely (best
# match 0.27 and 0.35 of 0.38); nearer misses such as "Who designed the lamps?" (0.40) are
# still answered
NEAR_MISSES = [
    "Which company built the harbour district's lighthouse?",
    "What colour is the paint on the arches?",
]
ANSWERED = [
    ("How long is the Riverside Bridge?", "420 metres"),
    ("When did the bridge open to traffic?", "May 1932"),
    ("How often are the arches inspected?", "every two years"),
    # a known miss of the answer scorer: it ranks "About 30,000 vehicles cross the bridge on a
    # working day." above the lorries sentence (the words "vehicles cross the bridge"); strict,
    # so a scorer that gets it right makes this fail and the mark is taken off
    pytest.param("Which vehicles may not cross the bridge?", "40 tonnes",
                 marks=pytest.mark.xfail(strict=True, reason="answer scorer ranks the "
                                         "traffic sentence first")),
]


@pytest.fixture
def bridge(tmp_path: Path) -> Path:
    folder = tmp_path / "city"
    folder.mkdir()
    (folder / "bridge.md").write_text(BRIDGE, encoding="utf-8")
    return folder


@pytest.mark.parametrize("question", NEAR_MISSES)
def test_a_near_miss_is_declined_by_the_match_floor(make_engine, bridge, question) -> None:
    engine = make_engine()
    engine.ingest([bridge])
    answer = engine.ask(question, extractive=True)
    assert not answer.found and answer.citations == ()
    assert answer.text == "The documents do not contain an answer to this question."
    # the floor is what declines it: without it (and without the answer scorer, which
    # declines it too) the coverage rule let it through
    floorless = make_engine(abstain_min_match=0.0, answer_scorer="")
    assert floorless.ask(question, extractive=True).found


@pytest.mark.parametrize(("question", "key"), ANSWERED)
def test_what_the_text_holds_is_still_answered(make_engine, bridge, question, key) -> None:
    engine = make_engine()
    engine.ingest([bridge])
    answer = engine.ask(question, extractive=True)
    assert answer.found and key in answer.text.replace("\n", " ")
    assert answer.citations[0].path.endswith("bridge.md")


def _scored(cosine: float, coverage: float) -> Scored:
    return Scored(Candidate(0, "a sentence", 0, 10, "sentence"), 0.9, cosine, 0.9, coverage)


def test_the_floor_reads_the_best_candidates_cosine_and_term_share() -> None:
    question = "How much did the resurfacing of the deck cost?"
    at_floor = (MIN_ANSWER_MATCH - 0.4 * 0.5) / 0.6  # 0.6 x cosine + 0.4 x 0.5 = the floor
    assert answer_match(_scored(at_floor, 0.5)) == pytest.approx(MIN_ANSWER_MATCH)
    assert answerable([_scored(at_floor + 1e-6, 0.5)], question)
    assert not answerable([_scored(at_floor - 0.01, 0.5)], question)
    # one of the best three is enough: the ranking score and the match may disagree
    # (regression: "Which header carries the API key?" over api.md ranked a sentence about
    # another header first, 0.25, and declined, though the second matched at 0.52)
    assert answerable([_scored(0.1, 0.5), _scored(at_floor + 0.01, 0.5)], question)
    assert not answerable([_scored(0.1, 0.5)] * 3 + [_scored(0.9, 0.9)], question)
    # the IDF-weighted score plays no part: a high one does not lift a loose match
    assert not answerable([_scored(0.1, 0.5)], question)
    assert answerable([_scored(0.1, 0.5)], question, min_match=0.0)
    # no floor where nothing was embedded (a language the embedding model does not read)
    assert answerable([_scored(0.0, 0.5)], question, dense=False)
    # a keyword query of one or two terms is judged by its terms alone
    assert answerable([_scored(0.1, 0.5)], "resurfacing cost")
