"""The measure of ``benchmarks/scan_cuad.py``: which flags count as clauses found with
confidence (regression: a heading-only ``needs review`` flag whose score reached the threshold
was counted as a confident finding, so the end-to-end figures differed from the calibration's
best-unit rule)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from citewise.scan.checks import Verdict
from citewise.scan.playbook import Severity
from citewise.scan.scanner import Flag
from citewise.types import Citation

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "scan_cuad.py"
TEXT = ("31. ASSIGNMENT AND CHANGE OF CONTROL\n"
        "Either party may terminate this Agreement upon a change of control of the other party.")
HEADING = (0, 36)
CLAUSE = (37, len(TEXT))


@pytest.fixture(scope="module")
def measure() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scan_cuad_measure", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def flag(span: tuple[int, int] | None, score: float, verdict: Verdict) -> Flag:
    citation = None if span is None else Citation(
        n=1, chunk_id="", document_id="d", path="c.txt", title="c", section=(), page=None,
        line_start=1, line_end=2, char_start=span[0], char_end=span[1], score=score)
    return Flag(rule="change-of-control", title="Change of control",
                clause_type="Change Of Control", severity=Severity.MEDIUM, verdict=verdict,
                explanation="", citation=citation, score=score, threshold=3.0,
                review_threshold=1.0)


def test_a_bare_heading_above_the_threshold_is_not_found_with_confidence(measure) -> None:
    assert TEXT[slice(*HEADING)] == "31. ASSIGNMENT AND CHANGE OF CONTROL"
    assert not measure.found_with_confidence(flag(HEADING, 7.2, Verdict.NEEDS_REVIEW), TEXT)


def test_a_clause_at_or_above_the_threshold_is_found_with_confidence(measure) -> None:
    assert measure.found_with_confidence(flag(CLAUSE, 3.0, Verdict.DEVIATES), TEXT)
    # an indeterminate check on a confident clause still counts: the finder found it
    assert measure.found_with_confidence(flag(CLAUSE, 4.5, Verdict.NEEDS_REVIEW), TEXT)


def test_below_the_threshold_or_uncited_is_not_found_with_confidence(measure) -> None:
    assert not measure.found_with_confidence(flag(CLAUSE, 2.9, Verdict.NEEDS_REVIEW), TEXT)
    assert not measure.found_with_confidence(flag(None, 0.0, Verdict.NOT_FOUND), TEXT)
