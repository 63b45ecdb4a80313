"""``citewise train-reranker`` end to end on a tiny JSONL, and the JSONL's error messages.

The runs are a few optimiser steps on short inputs (max 64 tokens) so that they stay fast;
what they check is the plumbing: the file is written, loads as an :class:`OnnxReranker`,
carries its settings, and computes the same logits as the PyTorch model it was exported from.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from typer.testing import CliRunner

from citewise.cli import app
from citewise.errors import ConfigError
from citewise.eval.datasets import load_beir
from citewise.retrieve.rerank import CrossEncoderReranker, OnnxReranker, load_reranker, passage_text
from citewise.train.data import pairs_of, read_jsonl, resolve_examples
from tests.conftest import DATASETS

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny_jsonl(tmp_path_factory):
    """8 SciFact *train* questions, each with its relevant abstract and 2 random ones."""
    ds = load_beir(DATASETS / "scifact", split="train")
    rng = random.Random(0)
    ids = sorted(ds.corpus)
    path = tmp_path_factory.mktemp("data") / "feedback.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for qid in sorted(ds.qrels)[:8]:
            pos = ds.corpus[min(ds.qrels[qid])]
            negs = [ds.corpus[rng.choice(ids)] for _ in range(2)]
            f.write(json.dumps({"query": ds.queries[qid],
                                "positive": [f"{pos.title}\n{pos.text}"],
                                "negative": [f"{n.title}\n{n.text}" for n in negs]}) + "\n")
    return path


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("CITEWISE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_full_fine_tune_writes_an_onnx_file_equal_to_the_torch_model(env, tiny_jsonl):
    out = env / "r.onnx"
    result = runner.invoke(app, [
        "train-reranker", str(out), "--jsonl", str(tiny_jsonl), "--max-steps", "3",
        "--batch-size", "4", "--max-length", "64", "--fp32-out", str(env / "r.fp32.onnx"),
        "--save-torch", str(env / "torch")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "3 steps over 24 pairs" in " ".join(result.output.split())

    # every window, as the PyTorch reference reads them (the ONNX default reads one)
    int8 = load_reranker(str(out), windows="all")
    fp32 = OnnxReranker(env / "r.fp32.onnx", windows="all")
    assert isinstance(int8, OnnxReranker) and int8.max_length == fp32.max_length == 64
    assert out.stat().st_size < 0.4 * (env / "r.fp32.onnx").stat().st_size  # int8 weights

    rows = [json.loads(line) for line in tiny_jsonl.read_text().splitlines()]
    query, passages = rows[0]["query"], rows[0]["positive"] + rows[0]["negative"]
    reference = CrossEncoderReranker(env / "torch")
    reference.model.max_length = 64
    want = reference.score(query, passages)
    got = fp32.score(query, passages)
    assert got.dtype == np.float32 and got.shape == (3,)
    np.testing.assert_allclose(got, want, atol=1e-3)
    np.testing.assert_allclose(int8.score(query, passages), want, atol=0.25)

    # --init goes on from the saved folder: the trained head, not a new one
    import torch

    from citewise.retrieve.rerank import base_tokenizer, encode
    from citewise.train.reranker import TrainConfig, load_base

    again = load_base(TrainConfig(init=str(env / "torch"), max_length=64)).eval()
    feed = encode(base_tokenizer(64), [(query, p) for p in passages])
    with torch.no_grad():
        logits = again(**{k: torch.from_numpy(v) for k, v in feed.items()}).logits[:, 0].numpy()
    # the same pairs cut to 64 tokens as `encode` cuts them (the rerankers' own scores take
    # the best of several windows of a longer passage, issue 21's C40)
    truncated = reference.model.predict([(query, p) for p in passages], convert_to_numpy=True,
                                        activation_fn=torch.nn.Identity())
    np.testing.assert_allclose(logits, np.asarray(truncated).reshape(-1), atol=1e-4)
    with pytest.raises(ConfigError, match="not a model folder saved by"):
        load_base(TrainConfig(init=str(env)))


def test_lora_run_exports_a_loadable_model(env, tiny_jsonl):
    out = env / "lora.onnx"
    result = runner.invoke(app, [
        "train-reranker", str(out), "--jsonl", str(tiny_jsonl), "--lora", "--max-steps", "2",
        "--batch-size", "4", "--max-length", "64", "--no-quantize"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    reranker = load_reranker(str(out))
    scores = reranker.score("a question", ["one passage", "another passage"])
    assert scores.shape == (2,) and np.isfinite(scores).all()

    # an fp32 file is scored in length-sorted batches (not one pair a run, as dynamic int8
    # must be): a pair's logit must not depend on its batch-mates or their padding
    assert isinstance(reranker, OnnxReranker) and not reranker.quantized
    assert reranker.batch_size > 1
    passages = [f"passage {i} about " + "cells " * (i * 3) for i in range(20)]
    one_by_one = np.array([reranker.score("cell growth", [p])[0] for p in passages])
    together = reranker.score("cell growth", passages)
    np.testing.assert_allclose(together, one_by_one, atol=1e-4)
    assert np.ptp(together) > 1e-3  # the passages do get different scores


@pytest.mark.parametrize("line, message", [
    ('{"query": "q", "positive": ["p"]', "not valid JSON"),
    ('["q", "p"]', "expected a JSON object"),
    ('{"query": "", "positive": ["p"]}', '"query" must be a non-empty string'),
    ('{"query": "q", "positive": []}', '"positive" must be a non-empty list'),
    ('{"query": "q", "positive": ["p"], "negative": [3]}', '"negative" must be a list'),
    ('{"query": "q", "positives": ["p"]}', "unknown key(s) ['positives']"),
])
def test_a_bad_line_is_an_error_naming_the_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"query": "fine", "positive": ["ok"]}\n\n' + line + "\n")
    with pytest.raises(ConfigError) as err:
        read_jsonl(path)
    assert f"{path}:3:" in str(err.value) and message in str(err.value)


def test_the_cli_reports_a_bad_line_cleanly(env):
    path = env / "bad.jsonl"
    path.write_text('{"query": "q", "positive": "p", "negative": "n"}\n{"query": 1}\n')
    result = runner.invoke(app, ["train-reranker", str(env / "x.onnx"), "--jsonl", str(path)])
    assert result.exit_code == 1
    flat = "".join(result.output.split())  # rich wraps long lines
    assert f"{path}:2:" in flat and '"query"mustbeanon-emptystring' in flat
    assert not (env / "x.onnx").exists()


def test_text_examples_without_an_index_keep_their_own_negatives(tiny_jsonl):
    examples = resolve_examples(read_jsonl(tiny_jsonl), "feedback", None)
    assert len(examples) == 8 and all(len(e.negatives) == 2 for e in examples)
    pairs = pairs_of(examples)
    assert len(pairs) == 24 and sum(y for *_, y in pairs) == 8


def test_chunk_ids_resolve_to_passages_and_negatives_are_mined_from_the_index(make_engine, tmp_path):
    from tests.conftest import CASES

    engine = make_engine()
    engine.ingest([CASES / "c39_small_corpus", CASES / "c21_delete"])
    marigold = engine.search("Project Marigold launch date", min_score=0.0, top_k=1).hits[0]
    assert marigold.document.path.endswith("marigold.txt")
    path = tmp_path / "feedback.jsonl"
    path.write_text(json.dumps({"query": "When is the Project Marigold launch?",
                                "positive": [marigold.chunk_id]}) + "\n")
    [example] = resolve_examples(read_jsonl(path), "feedback", engine.retriever, negatives=2)
    assert example.positives == (passage_text(marigold.document.title, marigold.chunk.section,
                                              marigold.chunk.text),)
    assert len(example.negatives) == 2
    assert all("Marigold" not in n for n in example.negatives)


def test_written_examples_read_back_as_the_same_examples(tmp_path, tiny_jsonl):
    from citewise.train.data import write_jsonl

    examples = resolve_examples(read_jsonl(tiny_jsonl), "feedback", None)
    path = write_jsonl(tmp_path / "out" / "examples.jsonl", examples)
    again = resolve_examples(read_jsonl(path), "feedback", None)
    assert again == examples


def test_each_group_is_one_positive_then_distinct_negatives_of_its_question():
    from citewise.train.data import Example
    from citewise.train.reranker import _epoch_groups

    examples = [Example("q1", ("p1", "p1b"), ("n1", "n2", "n3", "n4", "n5"), "s"),
                Example("q2", ("p2",), ("m1",), "s")]
    groups = _epoch_groups(examples, 4, random.Random(0))
    assert len(groups) == 3  # one group per positive
    for group in groups:
        query, positive, label = group[0]
        assert label == 1.0 and positive.startswith("p")
        negatives = [p for q, p, y in group[1:] if q == query and y == 0.0]
        assert len(negatives) == len(group) - 1 == (3 if query == "q1" else 1)
        assert len(set(negatives)) == len(negatives)
        assert set(negatives) <= set(next(e for e in examples if e.query == query).negatives)
    assert _epoch_groups(examples, 4, random.Random(0)) == groups  # repeatable with the seed


@pytest.mark.parametrize("field, value, message", [
    ("loss", "pairwise", "is not one of listwise, pointwise"),
    ("group_size", 1, "a group needs a positive and at least one negative"),
])
def test_bad_training_settings_are_errors_naming_the_setting(field, value, message):
    from citewise.train.reranker import TrainConfig

    with pytest.raises(ConfigError, match=message):  # at once, before any data is prepared
        TrainConfig(**{field: value})


def test_the_cli_refuses_bad_training_settings_before_preparing_data(env, tiny_jsonl):
    out = env / "x.onnx"
    bogus = runner.invoke(app, ["train-reranker", str(out), "--jsonl", str(tiny_jsonl),
                                "--loss", "pairwise"])
    assert bogus.exit_code == 2 and "pairwise" in bogus.output  # not a choice: usage error
    no_model = runner.invoke(app, ["train-reranker", str(out), "--jsonl", str(tiny_jsonl),
                                   "--init", str(env)])
    assert no_model.exit_code == 1
    assert "not a model folder saved by" in " ".join(no_model.output.split())
    onto_file = runner.invoke(app, ["train-reranker", str(out), "--jsonl", str(tiny_jsonl),
                                    "--save-torch", str(tiny_jsonl)])
    assert onto_file.exit_code == 1 and "is a file; give a folder" in " ".join(onto_file.output.split())
    not_onnx = runner.invoke(app, ["train-reranker", str(env / "outdir"), "--jsonl",
                                   str(tiny_jsonl)])
    assert not_onnx.exit_code == 1 and "must end in .onnx" in " ".join(not_onnx.output.split())
    assert not out.exists()


@pytest.mark.slow  # trains a cross-encoder
def test_listwise_training_learns_to_put_the_positive_first(tiny_jsonl):
    """A few steps on 8 questions: the untrained head orders each question's positive above
    both random abstracts for about a third of them (chance); after training, for most."""
    import torch

    from citewise.retrieve.rerank import base_tokenizer, encode
    from citewise.train.reranker import TrainConfig, fine_tune, load_base

    examples = resolve_examples(read_jsonl(tiny_jsonl), "feedback", None)
    config = TrainConfig(max_length=64, batch_size=6, group_size=3, max_steps=24, seed=0)
    tokenizer = base_tokenizer(64)

    def firsts(model) -> int:
        won = 0
        for e in examples:
            feed = encode(tokenizer, [(e.query, p) for p in (*e.positives, *e.negatives)])
            with torch.no_grad():
                logits = model(**{k: torch.from_numpy(v) for k, v in feed.items()}).logits[:, 0]
            won += int(logits.argmax()) == 0
        return won

    before = firsts(load_base(config).eval())
    model, stats = fine_tune(examples, config)
    assert stats["steps"] == 24
    after = firsts(model)
    assert after >= 7 and after > before, (before, after)


def test_a_text_positive_is_never_mined_back_as_a_negative(make_engine, tmp_path):
    """Regression: a positive given as text (a sentence of the right chunk, without its title
    line) only excluded a chunk whose passage equalled it exactly, so mining took the right
    chunk itself as a hard negative and training learned to rank the answer low."""
    from tests.conftest import CASES

    engine = make_engine()
    engine.ingest([CASES / "c39_small_corpus", CASES / "c21_delete"])
    path = tmp_path / "feedback.jsonl"
    path.write_text(json.dumps({
        "query": "When is the Project Marigold launch?",
        "positive": ["The public launch date for Project Marigold is 14 March."]}) + "\n")
    [example] = resolve_examples(read_jsonl(path), "feedback", engine.retriever, negatives=3)
    assert example.negatives and all("14 March" not in n for n in example.negatives)
