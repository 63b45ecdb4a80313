"""The calibration of the scan's verdict thresholds (``benchmarks/build_scan_prototypes.py``,
used by ``benchmarks/train_scan_lexical.py``; issue 25, sixth round): a type's confident
threshold shows ``confident_precision`` on the calibrate contracts (0.8 shipped, for every
type); 0, the option measured in the sixth round and not shipped, makes it the F1-tuned
threshold."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from citewise.scan.classify import NEVER_CONFIDENT

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
DATA = Path(__file__).resolve().parents[2] / "src" / "citewise" / "scan" / "data"

# (best score, best unit is right) per calibrate contract, best first
PAIRS = [(5.0, True), (4.0, True), (3.0, False), (2.0, True), (1.0, False), (0.5, True),
         (0.0, False), (-1.0, False)]


@pytest.fixture(scope="module")
def build() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(
            "build_scan_prototypes_calibration", BENCH / "build_scan_prototypes.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def test_confident_threshold_with_precision_zero_is_the_f1_threshold(build):
    # 0.8 wanted: 5, 4 right, 3 wrong (2/3), 2 right (3/4), 1 wrong, 0.5 right (4/6):
    # no score from 3 pairs on shows 0.8, so the lowest with support 3 and 0.8 is none
    assert build.confident_threshold(PAIRS, 0.5) == NEVER_CONFIDENT
    # 0.75 wanted: from 2.0 (3 right of 4)
    assert build.confident_threshold(PAIRS, 0.5, 0.75) == 2.0
    # 0: the threshold itself, however few of the pairs reaching it are right
    assert build.confident_threshold(PAIRS, 0.5, 0.0) == 0.5
    assert build.confident_threshold(PAIRS, 0.7, 0.0) == 0.7
    # ... provided CONFIDENT_SUPPORT (3) pairs reach it
    assert build.confident_threshold(PAIRS, 3.5, 0.0) == NEVER_CONFIDENT


def test_verdict_thresholds_take_the_confident_precision(build):
    best = {"Non-Compete": PAIRS}
    f1 = {"Non-Compete": 0.5}
    _, strict = build.verdict_thresholds(best, {"Non-Compete": 5}, f1, 5)
    review, found = build.verdict_thresholds(best, {"Non-Compete": 5}, f1, 5, 0.0)
    assert strict["Non-Compete"] == NEVER_CONFIDENT
    assert found["Non-Compete"] == 0.5
    assert review["Non-Compete"] <= found["Non-Compete"]
    # a type with too few calibrate contracts takes the pooled margin: 0 with precision 0
    _, pooled = build.verdict_thresholds(best, {"Non-Compete": 2}, f1, 5, 0.0)
    assert pooled["Non-Compete"] == 0.5


def test_no_embeddings_gives_zero_vectors(build):
    out = build.NoEmbeddings(384).embed(["a", "b", "c"])
    assert out.shape == (3, 384) and out.dtype == np.float32 and not out.any()


def test_precision_groups_pool_every_type_when_the_precisions_agree(build):
    labels, lexical = ["Governing Law", "Parties", "Non-Compete"], ["Governing Law", "Non-Compete"]
    assert build.precision_groups(labels, lexical, build.CONFIDENT_PRECISION) == [
        (labels, build.CONFIDENT_PRECISION)]
    assert build.precision_groups(labels, lexical, 0.0) == [
        (lexical, 0.0), (["Parties"], build.CONFIDENT_PRECISION)]
    assert build.precision_groups(lexical, lexical, 0.0) == [(lexical, 0.0)]


def test_the_shipped_lexical_types_keep_the_08_precision_rule(build):
    """The shipped thresholds are those of the 0.8 rule (``LEXICAL_CONFIDENT_PRECISION``), not
    the F1 rule: where the rule finds no score that reliable the type is review-only
    (Non-Compete), and several types are confident only above their F1 threshold."""
    assert build.LEXICAL_CONFIDENT_PRECISION == build.CONFIDENT_PRECISION == 0.8
    with np.load(DATA / "cuad_minilm.npz", allow_pickle=False) as npz:
        typed = [str(t) for t in npz["threshold_labels"]]
        lexical = [str(t) for t in npz["lex_labels"]]
        f1 = dict(zip(typed, npz["thresholds"].tolist(), strict=True))
        confident = dict(zip(typed, npz["confident_thresholds"].tolist(), strict=True))
        review = dict(zip(typed, npz["review_thresholds"].tolist(), strict=True))
        assert float(npz["lex_embedding_scale"]) == 0.0  # calibrated without embeddings
    assert len(lexical) == 11
    for t in lexical:
        assert review[t] <= f1[t] <= confident[t], t
    assert confident["Non-Compete"] == NEVER_CONFIDENT
    above = [t for t in lexical if confident[t] > f1[t]]
    assert {"Termination For Convenience", "Exclusivity", "Change Of Control",
            "Uncapped Liability"} <= set(above), above
