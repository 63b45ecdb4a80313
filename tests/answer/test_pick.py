"""The pick-then-quote and pick-then-write answerers (citewise.answer.pick) against a real
llama.cpp server with the bundled 0.5B model, and against real servers that misbehave."""

from __future__ import annotations

import pytest

from citewise.answer.pick import parse_pick
from citewise.answer.prompts import PICK_INSTRUCTION, pick_messages, write_after_pick
from citewise.types import StatusEvent
from tests.answer.test_llm import KETTLE, _kitchen, _run

TOASTER = "How many browning levels does the T1 toaster have?"


@pytest.mark.parametrize(("reply", "picked"), [
    ("2", [2]),
    ("3, 1", [3, 1]),
    (" [2], [2] and [4]", [2, 4]),  # duplicates once, citation brackets allowed
    ("1, 2, 3, 4, 5", [1, 2, 3]),  # at most the limit
    ("0", []),  # none answers
    ("0. None of the passages answers it.", []),
    ("9, 2", [2]),  # out of range numbers dropped
    ("9", None),  # nothing in range: not a pick
    ("The warranty lasts two years.", None),
    ("", None),
    # "none" in words, as the not-found answer starts (seen: the 1.5B model asked for the
    # default top_k), even when the reply's token cap cuts it short
    ("The documents do not contain", []),
    ('"The documents do not contain an answer to this question."', []),
    ("The documents do not contain it, but [3] comes close", [3]),
])
def test_a_picking_reply_is_read_as_passage_numbers(reply: str, picked) -> None:
    assert parse_pick(reply, n=5, limit=3) == picked


def test_the_picking_prompt_keeps_the_writers_prefix_and_asks_for_numbers() -> None:
    from citewise.answer.prompts import build_messages
    from tests.answer.test_grounding import _evidence

    evidence = _evidence()
    write = build_messages("What is the fee?", evidence, (), budget_tokens=400,
                           count_tokens=len)
    pick = pick_messages("What is the fee?", evidence, (), budget_tokens=400, count_tokens=len)
    assert pick[0] == write[0]  # the same system message: one prompt cache for both
    assert pick[-1]["content"].startswith(write[-1]["content"].split("\nAnswer in ")[0])
    assert pick[-1]["content"].endswith(PICK_INSTRUCTION)
    follow = write_after_pick(pick, "1", [1], "What is the fee?")
    assert follow[:len(pick)] == pick  # the picking conversation is the prefix
    assert follow[-2] == {"role": "assistant", "content": "1"}
    assert "[1]" in follow[-1]["content"] and follow[-1]["content"].endswith("Answer in English.")


def test_pick_quotes_the_chosen_sentence_with_its_citation(make_engine, tmp_path,
                                                           default_llm_settings) -> None:
    # the default model: the 0.5B one replied "[6]" with two passages, or picked "Descale the
    # kettle every four weeks" for the warranty question
    engine = make_engine(**default_llm_settings, answer_style="pick")
    engine.ingest([_kitchen(tmp_path)])
    events, tokens, answer = _run(engine, TOASTER)
    assert answer.mode == "llm" and answer.fallback_reason is None and answer.found
    assert tokens == answer.text
    assert "six browning levels" in answer.text
    cited = [c for c in answer.citations if c.n in answer.cited]
    assert cited and all(c.path.endswith("toaster.md") for c in cited)
    # the quote is the cited passage's own words: every sentence is supported
    assert answer.support and all(s.supported for s in answer.support)
    assert any(isinstance(e, StatusEvent) and e.stage == "pick" for e in events)
    assert answer.metrics["picked"] >= 1 and answer.metrics["pick_ms"] > 0


def test_pick_write_answers_from_the_chosen_passages_only(make_engine, tmp_path,
                                                          default_llm_settings) -> None:
    engine = make_engine(**default_llm_settings, answer_style="pick-write")
    engine.ingest([_kitchen(tmp_path)])
    events, tokens, answer = _run(engine, KETTLE)
    assert answer.found and tokens.strip() == answer.text.strip()
    assert "24" in answer.text
    stages = [e.stage for e in events if isinstance(e, StatusEvent)]
    assert stages.index("pick") < stages.index("generate")
    cited = [c for c in answer.citations if c.n in answer.cited]
    assert cited and all(c.path.endswith("kettle.md") for c in cited)


def test_a_picking_reply_naming_no_passage_gives_the_marked_extractive_answer(
        make_engine, tmp_path, broken_server) -> None:
    broken_server.mode = "echo"  # prose with no passage number
    engine = make_engine(llm_provider="openai-compatible", llm_base_url=broken_server.url,
                         llm_model="broken", answer_style="pick")
    engine.ingest([_kitchen(tmp_path)])
    events, _, answer = _run(engine, KETTLE)
    assert answer.mode == "extractive" and "24 months" in answer.text
    assert "named no passage" in (answer.fallback_reason or "")
    assert any(isinstance(e, StatusEvent) and e.stage == "fallback" for e in events)


NF = "The documents do not contain an answer to this question."


@pytest.mark.parametrize(("pieces", "shown"), [
    # regression: the 1.5B model's answer to "What does citewise reindex do?" ended with it
    (["Reindex re-embeds every file [1].", " The documents do not",
      " contain an answer to this question."], "Reindex re-embeds every file [1]."),
    ([NF, " However, the fee is EUR 250 [2]."], " However, the fee is EUR 250 [2]."),
    ([NF], NF),  # the whole answer: kept
    (["the documents do not contain an answer to this question. [1]"],
     "the documents do not contain an answer to this question. [1]"),
    (["The documents do not say much, but the fee is EUR 250 [1]."],
     "The documents do not say much, but the fee is EUR 250 [1]."),  # not the sentence
    (["The fee is EUR 250 [1]. The documents", " do"], "The fee is EUR 250 [1]. The documents do"),
])
def test_the_not_found_sentence_is_dropped_from_an_answer_that_says_something(
        pieces: list[str], shown: str) -> None:
    from citewise.answer.llm import NotFoundSentenceFilter

    stage = NotFoundSentenceFilter()
    out = "".join(stage.feed(p) for p in pieces) + stage.flush()
    assert out.strip() == shown.strip()


def test_the_bundled_model_quotes_by_default_without_loading_a_model(make_engine,
                                                                     tmp_path) -> None:
    """``answer_style='auto'`` is ``quote`` for the bundled model: on every held-out run of
    the answer benchmark its written answers were no more accurate than the quote and came
    5-7 s later (docs/benchmarks.md), so the evidence sentences are quoted and no model is
    started; ``write`` stays the default for any other provider (below)."""
    engine = make_engine(llm_provider="local")  # the default model and style
    assert engine.settings.answer_style == "auto" and not engine.settings.llm_model
    assert engine.settings.resolved_answer_style() == "quote"
    engine.ingest([_kitchen(tmp_path)])
    events, tokens, answer = _run(engine, KETTLE)
    stages = [e.stage for e in events if isinstance(e, StatusEvent)]
    assert not {"load", "pick", "generate", "fallback"} & set(stages), stages
    assert answer.mode == "extractive" and answer.fallback_reason is None
    assert "24 months" in answer.text and answer.cited
    assert tokens.strip() == answer.text.strip()


def test_the_bundled_model_picks_before_it_writes_when_asked_to(make_engine, tmp_path,
                                                               default_llm_url) -> None:
    engine = make_engine(llm_provider="local", llm_threads=2, answer_style="pick-write")
    engine.ingest([_kitchen(tmp_path)])
    events, tokens, answer = _run(engine, KETTLE)
    stages = [e.stage for e in events if isinstance(e, StatusEvent)]
    assert "pick" in stages and "generate" in stages, stages
    assert answer.mode == "llm" and "24" in answer.text and tokens.strip() == answer.text.strip()


def test_other_providers_write_by_default(make_engine, tmp_path, broken_server) -> None:
    broken_server.mode = "example"  # a right answer after the prompt's example
    engine = make_engine(llm_provider="openai-compatible", llm_base_url=broken_server.url,
                         llm_model="broken")
    engine.ingest([_kitchen(tmp_path)])
    events, _, answer = _run(engine, KETTLE)
    stages = [e.stage for e in events if isinstance(e, StatusEvent)]
    assert "pick" not in stages and "generate" in stages
    assert broken_server.requests == 1 and answer.text == "The warranty lasts 24 months [1]."
