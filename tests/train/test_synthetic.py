"""Synthetic training questions (``citewise train-reranker --synthetic``, issue 26 item 1): the
question read out of a model's reply, the passages drawn from the index under a path, and the
whole preparation with the real bundled small model and mined negatives."""

from __future__ import annotations

from pathlib import Path

import pytest

from citewise.config import Settings
from citewise.errors import ConfigError
from citewise.retrieve.rerank import passage_text
from citewise.train.prepare import TrainingRequest, check_request, gather_examples
from citewise.train.synthetic import clean_question, sample_passages

ROOF = ("The warehouse roof was replaced in March 2024 by Norrland Roofing. The new roof carries "
        "a twenty-year warranty that covers leaks and storm damage, and it is inspected every "
        "October by the facilities team.")
BOILER = ("The boiler room on level minus one is locked at all times. Only the two caretakers "
          "hold keys, and a visitor must sign the red logbook at the door before entering and "
          "again when leaving the room.")
PARKING = ("Staff parking is in the east lot. Each employee receives one permit per year from "
           "reception; a lost permit costs fifteen euros to replace and is reissued within two "
           "working days.")


@pytest.mark.parametrize(("reply", "question"), [
    ("How long is the roof warranty?", "How long is the roof warranty?"),
    ('Question: "Who holds the boiler room keys?"\nThe caretakers.', "Who holds the boiler room keys?"),
    ("1. What does a lost parking permit cost? It costs fifteen euros.", "What does a lost parking permit cost?"),
    ("\n\n  - When is the roof inspected?  ", "When is the roof inspected?"),
    ("The passage describes the parking rules.", None),  # no question
    ("Why?", None),  # too short to train on
])
def test_the_question_is_read_out_of_the_reply(reply, question):
    assert clean_question(reply) == question


def _ingest(make_engine, tmp_path: Path):
    site = tmp_path / "site"
    (site / "facilities").mkdir(parents=True)
    (site / "facilities" / "roof.txt").write_text(ROOF, encoding="utf-8")
    (site / "facilities" / "boiler.txt").write_text(BOILER, encoding="utf-8")
    (site / "parking.txt").write_text(PARKING, encoding="utf-8")
    engine = make_engine()
    engine.ingest([site])
    return engine, site


def test_passages_are_drawn_only_under_the_path_and_by_the_seed(make_engine, tmp_path):
    engine, site = _ingest(make_engine, tmp_path)
    drawn = sample_passages(engine.store, site / "facilities", 10, seed=0)
    texts = {text.split("\n", 1)[1] for _, text in drawn}
    assert texts == {ROOF, BOILER}  # never the parking file outside the folder
    assert sample_passages(engine.store, site / "facilities", 10, seed=0) == drawn
    assert len(sample_passages(engine.store, site, 2, seed=3)) == 2
    [(chunk_id, text)] = sample_passages(engine.store, site / "parking.txt", 5, seed=0)
    chunk, doc = engine.store.get_chunks([chunk_id])[chunk_id]
    assert text == passage_text(doc.title, chunk.section, chunk.text) and PARKING in text
    with pytest.raises(ConfigError, match=r"--synthetic .*elsewhere: no indexed document is "
                                          r"there; run `citewise ingest"):
        sample_passages(engine.store, tmp_path / "elsewhere", 5, seed=0)


def test_synthetic_is_a_source_of_its_own_and_needs_a_model_and_an_index(make_engine, tmp_path):
    request = TrainingRequest(synthetic=(tmp_path,))
    check_request(request, tmp_path / "r.onnx", None)  # a source: no "give training data"
    with pytest.raises(ConfigError, match=r"--synthetic .*nowhere: no such file or folder"):
        check_request(TrainingRequest(synthetic=(tmp_path / "nowhere",)), tmp_path / "r.onnx",
                      None)  # before the language model is started
    with pytest.raises(ConfigError, match="the index is empty"):
        gather_examples(request, Settings(home=tmp_path), [], lambda: None)
    engine, site = _ingest(make_engine, tmp_path)
    with pytest.raises(ConfigError, match="no language model to write the questions"):
        gather_examples(TrainingRequest(synthetic=(site,)), engine.settings, [],
                        lambda: engine.retriever)


def test_the_bundled_model_writes_questions_whose_negatives_are_mined(make_engine, tmp_path,
                                                                      llm_settings):
    from citewise.cli.train import _question_writer

    engine, site = _ingest(make_engine, tmp_path)
    asker = make_engine(**llm_settings)  # the same index, with the small bundled model
    write = _question_writer(asker)
    assert write is not None
    request = TrainingRequest(synthetic=(site / "facilities",), negatives=2, seed=0)
    prepared = gather_examples(request, engine.settings, [], lambda: engine.retriever,
                               write=write)
    assert prepared.sources == [(f"synthetic questions on {site / 'facilities'} "
                                f"({len(prepared.examples)} of 2 passages, seed 0)")]
    assert len(prepared.examples) >= 1  # the 0.5B model may fail one of the two
    for example in prepared.examples:
        assert example.query.endswith("?") and len(example.query.split()) >= 3
        [positive] = example.positives
        assert positive.endswith((ROOF, BOILER))
        # mined from the index: the other files, never the question's own passage
        assert example.negatives and positive not in example.negatives
        assert all(n.endswith((ROOF, BOILER, PARKING)) for n in example.negatives)
