"""The answer-sentence scorer (citewise.answer.scorer) and the answer shapes around it: the
shipped cross-encoder ranks the sentence that answers above the ones that only repeat the
question's words; a thing named by a number must be where the answer is; short "Label: value"
lines are answers too; the sentence splitter keeps "PATH..." and "e.g." inside a sentence."""

from __future__ import annotations

import json

import pytest

from citewise.answer.scorer import bundled_path, load_answer_scorer
from citewise.answer.selection import (
    Candidate,
    Scored,
    _sentence_candidates,
    answerable,
    holds_value,
    named_values,
)
from citewise.errors import ConfigError
from citewise.ingest.chunking import sentences


@pytest.fixture(scope="module")
def scorer():
    s = load_answer_scorer("bundled", threads=2)
    assert s is not None
    return s


def test_bundled_scorer_is_shipped_with_its_training_record():
    path = bundled_path()
    assert path.is_file()
    record = json.loads(path.with_name("answer-scorer-minilm-l6.json").read_text())
    assert record["file"] == path.name
    assert record["steps"] > 0 and record["seed"] == 0
    assert "trecqa" in record["data"] and "selqa" in record["data"]


def test_scorer_prefers_the_answer_to_a_restated_question_and_a_heading(scorer):
    question = "What port does the server listen on by default?"
    units = [
        ("Configuration", "What port does the server listen on by default?"),
        ("", "Server port"),
        ("Server port", "The server listens on port 8765 unless --port is given."),
        ("Server port", "The server can be started from the command line or as a service."),
    ]
    probs = scorer.probabilities(question, units)
    assert probs.shape == (4,)
    assert ((probs >= 0) & (probs <= 1)).all()
    assert int(probs.argmax()) == 2


def test_scorer_prefers_a_governing_law_clause_to_a_footer_naming_the_parties(scorer):
    question = ("Which law governs the license agreement between Hertz Investment Group and "
                "Acme Corp?")
    units = [
        ("", "LICENSOR: HERTZ INVESTMENT GROUP, LLC 4 LICENSEE: ACME CORP"),
        ("", ("This License Agreement is made between Hertz Investment Group, LLC and Acme "
             "Corp.")),
        ("", ("This Agreement shall be governed by and construed in accordance with the laws "
             "of the State of Delaware.")),
    ]
    assert int(scorer.probabilities(question, units).argmax()) == 2


def test_a_missing_scorer_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="CITEWISE_ANSWER_SCORER"):
        load_answer_scorer(str(tmp_path / "nope.onnx"))
    assert load_answer_scorer("") is None


def test_named_values_are_numbers_and_capitals_that_name_a_thing():
    assert named_values("What is the budget of project 14?") == ["14"]
    assert named_values("What does clause 4.2 say about notice?") == ["4.2"]
    assert named_values("Is the v2 API still served?") == ["v2"]
    assert named_values("What is the refund window in Policy B?") == ["B"]
    assert named_values("Что говорит статья 7 о сроках?") == ["7"]
    assert named_values("How do I set top_k to 3?") == []


def test_holds_value_does_not_match_inside_a_longer_number():
    assert holds_value("Project 14: budget 40,000 EUR", "14")
    assert holds_value("PROJECTS/PROJECT_14.MD", "14")
    assert not holds_value("Project 140: budget", "14")
    assert not holds_value("Project 4.14 budget", "14")
    assert not holds_value("clause 4.21 applies", "4.2")
    assert holds_value("as clause 4.2. says", "4.2")
    assert holds_value("Policy B: 30 days", "B")
    assert not holds_value("a list: b) the second", "B")


def test_label_value_line_is_a_candidate():
    """Regression: "Support hotline: +43 1 555 0199" (2 words and a number) was never a
    candidate, so "What is the support hotline number?" was declined."""
    text = "Contact\nSupport hotline: +43 1 555 0199\nOpening hours are 9 to 5 on weekdays."
    shown = [c.text for c in _sentence_candidates(text, 0, {"contact"})]
    assert "Support hotline: +43 1 555 0199" in shown
    assert "Contact" not in shown


def test_sentence_splitter_keeps_ellipsis_and_abbreviations_inside_a_sentence():
    """Regression: "citewise ingest PATH... adds files and folders to the index." was cut
    at the three dots and quoted as "adds files and folders to the index."."""
    assert sentences("citewise ingest PATH... adds files and folders to the index. "
                     "Next one.") == [("citewise ingest PATH... adds files and folders to the "
                                      "index."), "Next one."]
    assert sentences("Use a flag, e.g. the --top-k flag. Then ask.") == [
        "Use a flag, e.g. the --top-k flag.", "Then ask."]


PROJECT = "# Project {n}\n\nProject {n} is led by {lead}. Its approved budget is {budget} EUR.\n"
LEADS = ["Ana", "Ben", "Chen", "Dara", "Emil", "Femi", "Gita", "Hugo"]


@pytest.fixture
def projects(tmp_path, make_engine):
    folder = tmp_path / "projects"
    folder.mkdir()
    for n in range(1, 41):
        (folder / f"project_{n:02d}.md").write_text(PROJECT.format(
            n=n, lead=LEADS[n % len(LEADS)], budget=1000 * n + 7), encoding="utf-8")
    engine = make_engine()
    engine.ingest([folder])
    return engine


def test_question_naming_a_project_is_answered_from_that_project(projects):
    """Regression (held-back case): "project 14" among 40 project files quoted projects 15,
    13 and 16."""
    answer = projects.ask("What is the approved budget of project 14?", extractive=True)
    assert answer.found
    assert "14007" in answer.text.replace(",", "")
    cited = [c for c in answer.citations if c.n in answer.cited]
    assert cited and all(c.path.endswith("project_14.md") for c in cited)


def test_question_naming_a_project_that_does_not_exist_is_declined(projects):
    """Regression: projects 77 and 99 got other projects' budgets instead of "not found"."""
    for n in (77, 99):
        answer = projects.ask(f"What is the approved budget of project {n}?", extractive=True)
        assert not answer.found, answer.text


CONTRACT = """LICENSE AGREEMENT

This License Agreement is made between {a} and {b}.

1. Grant. {a} grants {b} a licence to use the software in its stores.

2. Term. This Agreement runs for {years} years from the effective date.

3. Governing law. This Agreement shall be governed by the laws of the State of {state}.

4. Notices. Notices are given in writing to the addresses above.
"""
PARTIES = [("Hertz Investment Group", "Acme Retail", "Delaware", 3),
           ("Borealis Mining", "Quintal Foods", "Texas", 5),
           ("Zephyr Aviation", "Lumen Clinics", "Ohio", 7),
           ("Orchid Textiles", "Granite Bank", "Nevada", 2)]


def test_question_naming_a_contract_by_its_parties_is_answered_from_that_contract(
        tmp_path, make_engine):
    """Regression: "Consider the agreement between X and Y; which law governs it?" opened
    with another contract's governing-law clause."""
    folder = tmp_path / "contracts"
    folder.mkdir()
    for i, (a, b, state, years) in enumerate(PARTIES):
        (folder / f"contract_{i}.txt").write_text(
            CONTRACT.format(a=a, b=b, state=state, years=years), encoding="utf-8")
    engine = make_engine()
    engine.ingest([folder])
    answer = engine.ask("Consider the License Agreement between Zephyr Aviation and Lumen "
                        "Clinics; which state's law governs it?", extractive=True)
    assert answer.found and "Ohio" in answer.text.split("[1]")[0], answer.text
    cited = [c for c in answer.citations if c.n in answer.cited]
    assert cited and all(c.path.endswith("contract_2.txt") for c in cited)


def _scored(probability: float | None, coverage: float = 0.0, cosine: float = 0.0) -> Scored:
    return Scored(Candidate(0, "a sentence", 0, 10, "sentence"), 0.5, cosine, coverage,
                  coverage, probability)


def test_answerable_trusts_a_sure_scorer_and_declines_an_unsure_one():
    """A long question shares few words with its answer (the word floor declined a 680-
    character question whose answer the scorer gave 0.51): with ``trust_probability`` a
    sentence the scorer is sure of answers; one it gives under the floor never does, whatever
    the words say."""
    question = ("We keep a handbook of Markdown files and PDFs and some colleagues write in "
                "Russian; what exactly do I need to do to switch the embedding model?")
    assert answerable([_scored(0.6)], question, trust_probability=0.5)
    assert not answerable([_scored(0.6)], question)  # off by default
    assert not answerable([_scored(0.05, coverage=1.0, cosine=1.0)], question)
    assert answerable([_scored(0.3, coverage=1.0, cosine=1.0)], question)
    assert answerable([_scored(None, coverage=1.0, cosine=1.0)], question)
