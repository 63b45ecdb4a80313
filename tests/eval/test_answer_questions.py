"""The answer benchmark's question sets stay true to the files they quote: a docs edit that
removes or rewords a gold quote fails here, not half-way through a long benchmark run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "benchmarks" / "answer_questions"


def _rows(name: str) -> list[dict]:
    lines = (QUESTIONS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_every_docs_gold_quote_is_once_in_its_file() -> None:
    rows = _rows("docs")
    assert len(rows) >= 60 and sum(not r["answerable"] for r in rows) >= 15
    assert {r["split"] for r in rows} == {"dev", "test"}
    for r in rows:
        if not r["answerable"]:
            assert not r["answers"], r["id"]
            continue
        assert r["answers"] and all(alt for alt in r["answers"]), r["id"]
        for place in [{"file": r["file"], "quote": r["quote"]}, *r.get("also", [])]:
            text = (ROOT / place["file"]).read_text(encoding="utf-8")
            assert text.count(place["quote"]) == 1, (r["id"], place["file"])


@pytest.mark.parametrize("package", ["click", "httpx"])
def test_every_code_gold_quote_is_once_in_the_installed_package(package: str) -> None:
    import importlib
    import importlib.metadata

    module = pytest.importorskip(package)
    rows = [r for r in _rows("code") if r.get("package", "click") == package]
    assert len(rows) >= 50 and sum(not r["answerable"] for r in rows) >= 5
    version = rows[0]["package_version"]
    if importlib.metadata.version(package) != version:
        pytest.skip(f"the code questions quote {package} {version}")
    root = Path(module.__file__).parent.parent
    for r in rows:
        if not r["answerable"]:
            assert not r["answers"] and r["file"] is None, r["id"]
            continue
        for place in [{"file": r["file"], "quote": r["quote"]}, *r.get("also", [])]:
            text = (root / place["file"]).read_text(encoding="utf-8")
            assert text.count(place["quote"]) == 1, (r["id"], place["file"])
