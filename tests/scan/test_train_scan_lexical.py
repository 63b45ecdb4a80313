"""Hard-negative mining in the training of the scan's lexical finder
(``benchmarks/train_scan_lexical.py``, issue 25 fifth round), with real scikit-learn fits."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def train() -> ModuleType:
    pytest.importorskip("sklearn")
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(
            "train_scan_lexical", BENCH / "train_scan_lexical.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def test_hard_negative_weights_pick_the_top_negatives(train):
    scores = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0, 9.0])
    target = np.array([False, False, False, False, False, False, True])
    # the negatives' 0.8 quantile is 4.0: the two negatives scoring 4 or more are hard
    weights = train.hard_negative_weights(scores, target, 0.8, 5.0)
    assert weights.tolist() == [5.0, 5.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert train.hard_negative_weights(scores, target, 0.8, 1.0).tolist() == [1.0] * 7
    # bare headings are never mined: the quantile is over the other negatives (0.8 of 4, 3,
    # 2, 1, 0 is 3.2), and the heading scoring 5 keeps weight 1
    eligible = np.array([False, True, True, True, True, True, True])
    weights = train.hard_negative_weights(scores, target, 0.8, 5.0, eligible)
    assert weights.tolist() == [1.0, 5.0, 1.0, 1.0, 1.0, 1.0, 1.0]


def _views(texts: list[str]) -> list[tuple[str, ...]]:
    return [(t, "", "", "") for t in texts]


def test_the_second_fit_pushes_the_hard_negatives_down(train):
    # convenience terminations are the type; terminations for breach share most words
    positives = [
        f"Either party may terminate this Agreement for convenience upon {d} days notice."
        for d in range(10, 40)
    ]
    hard = [
        f"Either party may terminate this Agreement upon {d} days notice of a material breach."
        for d in range(10, 40)
    ]
    easy = [
        f"The Supplier shall deliver {n} units of the goods every month to the Buyer."
        for n in range(10, 130)
    ]
    texts = positives + hard + easy
    labels = [["Termination For Convenience"]] * len(positives) + [[]] * (len(hard) + len(easy))
    kinds = ["Termination For Convenience"]
    one = train.fit(_views(texts), labels, kinds, 4.0, 1000, 0.0)
    mined = train.fit(
        _views(texts), labels, kinds, 4.0, 1000, 0.0, hard_quantile=0.75, hard_weight=10.0
    )
    probe = _views(
        [
            "Either party may terminate this Agreement upon 60 days notice of a material breach.",
            "Either party may terminate this Agreement for convenience upon 60 days notice.",
        ]
    )
    before, after = one.scores(probe)[:, 0], mined.scores(probe)[:, 0]
    assert after[0] < before[0]  # the breach termination scores lower after mining
    assert after[1] - after[0] > before[1] - before[0]  # and further below the right clause
