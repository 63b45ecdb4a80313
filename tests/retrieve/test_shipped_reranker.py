"""The reranker shipped with citewise (``CITEWISE_RERANKER_MODEL=bundled``).

Quality is checked on held-out data: 100 SciFact *test* queries (training used the train
qrels only) drawn with ``random.Random(0)``, over a corpus of hard candidates: the top 10
documents citewise's default pipeline ranks for each of them over the full corpus, plus every
judged document (909 in all). The ids are in ``data/scifact_rerank_subset100.json``, written by
``benchmarks/reranker.py``'s ``write_subset`` (n 100, depth 10, seed 0). The top 10 fused
candidates of each query are reranked at weight 0.7, the setting docs/reranker.md gives for
SciFact-like collections.

It replaces a subset of 30 queries over 247 abstracts, on which the shipped model showed no
gain (0.784 against 0.786): at 30 queries one question moves nDCG@10 by about 0.03, too much
noise to see the +0.024 measured on all 300 test queries (docs/benchmarks.md#reranker). The
larger subset was drawn once, with the same seed, and its result (+0.034) is what it gave.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from citewise.config import Settings
from citewise.eval.datasets import BeirDataset, load_beir
from citewise.eval.run import run_dataset
from citewise.retrieve.rerank import BUNDLED, BUNDLED_FILE, OnnxReranker, load_reranker
from tests.conftest import DATASETS

SUBSET = Path(__file__).parent / "data" / "scifact_rerank_subset100.json"


def test_the_shipped_file_is_small_and_loads_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert BUNDLED_FILE.is_file() and BUNDLED_FILE.stat().st_size < 30 * 2**20
    reranker = load_reranker(BUNDLED)
    assert isinstance(reranker, OnnxReranker) and reranker.name == str(BUNDLED_FILE)
    assert reranker.max_length == 192
    scores = reranker.score("Does aspirin reduce the risk of heart attack?", [
        "Aspirin\nDaily low-dose aspirin lowered the rate of myocardial infarction in adults.",
        "Volcanoes\nBasaltic lava flows cool into columnar joints.",
    ])
    assert scores.dtype == np.float32 and scores.shape == (2,)
    assert scores[0] > scores[1]


def test_a_score_does_not_depend_on_the_other_passages_scored_with_it():
    # regression: int8 dynamic quantisation takes each run's activation scale from the whole
    # batch (padding included), so batches of 16 moved the shipped model's logits by up to 3.0
    reranker = load_reranker(BUNDLED)
    assert isinstance(reranker, OnnxReranker) and reranker.quantized and reranker.batch_size == 1
    passages = [f"passage {i} about " + "cells " * (i * 7) for i in range(40)]
    one_by_one = np.array([reranker.score("cell growth", [p])[0] for p in passages])
    together = reranker.score("cell growth", passages)
    np.testing.assert_allclose(together, one_by_one, atol=1e-4)
    reverse = reranker.score("cell growth", passages[::-1])[::-1]
    np.testing.assert_allclose(reverse, together, atol=1e-4)
    assert reranker.score("q", []).shape == (0,)


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    ids = json.loads(SUBSET.read_text())
    full = load_beir(DATASETS / "scifact")
    dataset = BeirDataset(
        "scifact-rerank-subset100", {d: full.corpus[d] for d in ids["documents"]},
        {q: full.queries[q] for q in ids["queries"]}, {q: full.qrels[q] for q in ids["queries"]})
    # the setting the docs give for SciFact-like collections (the defaults, top 5 at weight
    # 0.2, are chosen across four domains and gain less here: 0.690 against 0.675)
    settings = Settings(home=tmp_path_factory.mktemp("home"), reranker_model=BUNDLED,
                        rerank_candidates=10, rerank_weight=0.7)
    return {r["run"]: r for r in run_dataset(dataset, settings, [settings.embedding_model])}


@pytest.mark.slow  # indexes 909 SciFact abstracts and reranks 100 queries
def test_the_shipped_reranker_improves_ndcg_over_the_fusion_alone(rows):
    fusion = rows["pipeline:minilm:weighted"]
    reranked = rows["hybrid:minilm:weighted+rerank"]
    assert reranked["queries"] == fusion["queries"] == 100
    assert 0.64 <= fusion["nDCG@10"] <= 0.70  # the subset is what it should be (measured 0.675)
    # measured 0.709 against 0.675 (one window per passage; 0.706 reading every window)
    assert reranked["nDCG@10"] >= fusion["nDCG@10"] + MIN_GAIN, (reranked, fusion)


MIN_GAIN = 0.02
