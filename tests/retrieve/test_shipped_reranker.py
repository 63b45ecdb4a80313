"""The reranker shipped with citewise (``CITEWISE_RERANKER_MODEL=bundled``).

Quality is checked on held-out data: 30 SciFact *test* queries (training used the train
qrels only), drawn with ``random.Random(0)`` among those answered in the first 1,329
abstracts, over a corpus of hard candidates: the top 10 documents citewise's default pipeline
ranks for each of them over those abstracts, plus every judged document (247 in all). The
ids are in ``data/scifact_rerank_subset.json``, written by ``python benchmarks/reranker.py
--scifact ../shared/datasets/scifact --corpus-docs 1329 --write-subset ...``. The top 10
fused candidates of each query are reranked (``rerank_candidates=10``), to keep the test short.
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

SUBSET = Path(__file__).parent / "data" / "scifact_rerank_subset.json"


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
        "scifact-rerank-subset", {d: full.corpus[d] for d in ids["documents"]},
        {q: full.queries[q] for q in ids["queries"]}, {q: full.qrels[q] for q in ids["queries"]})
    settings = Settings(home=tmp_path_factory.mktemp("home"), reranker_model=BUNDLED,
                        rerank_candidates=10)
    return {r["run"]: r for r in run_dataset(dataset, settings, [settings.embedding_model])}


def test_the_shipped_reranker_does_not_lower_ndcg_below_the_fusion_alone(rows):
    fusion = rows["pipeline:minilm:weighted"]
    reranked = rows["hybrid:minilm:weighted+rerank"]
    assert reranked["queries"] == fusion["queries"] == 30
    assert fusion["nDCG@10"] >= 0.75  # the subset is what it should be (measured 0.786)
    assert reranked["nDCG@10"] >= fusion["nDCG@10"] - 0.005, (reranked, fusion)


@pytest.mark.xfail(strict=True, reason="the shipped model (850 listwise steps on 749 SciFact "
                   "training questions) orders passages well on its own but does not improve "
                   "the fusion: measured 0.784 against 0.786 here, 0.720 against 0.717 on 60 "
                   "held-out training questions; see docs/benchmarks.md#reranker. A better "
                   "model makes this pass, and strict xfail then fails until this marker is "
                   "removed.")
def test_the_shipped_reranker_improves_ndcg_over_the_fusion_alone(rows):
    fusion = rows["pipeline:minilm:weighted"]
    reranked = rows["hybrid:minilm:weighted+rerank"]
    assert reranked["nDCG@10"] >= fusion["nDCG@10"] + MIN_GAIN, (reranked, fusion)


MIN_GAIN = 0.02
