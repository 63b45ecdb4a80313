"""The answer scorer's training data (citewise.train.answer_data): real files of the shared
datasets, the splits kept out, and the near misses added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citewise.retrieve.rerank import unit_text
from citewise.train.answer_data import (
    _detokenize,
    cuad_examples,
    pick_negatives,
    selqa_examples,
    with_near_misses,
    xquad_sentence_examples,
)
from citewise.train.data import Example

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


def test_detokenize_undoes_penn_treebank_escapes():
    assert _detokenize("the IRON LADY -LRB- Farrar , Straus -RRB- `` great '' book .") == \
        'the IRON LADY (Farrar, Straus) "great" book.'


def test_pick_negatives_keeps_the_hard_ones_and_is_repeatable():
    q = "When did the bridge open to traffic?"
    negs = ["The bridge is 420 metres long.", "Lorries use the ring road.",
            "The bridge opened a visitor centre in 2001.", "The lamps are LED.",
            "Traffic on the bridge is heavy.", "Cats sleep."]
    first = pick_negatives(q, negs, hard=2, easy=2)
    assert first == pick_negatives(q, negs, hard=2, easy=2)
    assert set(first[:2]) == {"The bridge opened a visitor centre in 2001.",
                              "Traffic on the bridge is heavy."}
    assert len(first) == 4 and len(set(first)) == 4


def test_selqa_units_carry_their_section_heading():
    examples = selqa_examples(DATASETS / "answer_selection" / "selqa" / "selqa-ass-dev.json",
                              limit=5)
    assert len(examples) == 5
    raw = json.loads((DATASETS / "answer_selection" / "selqa" / "selqa-ass-dev.json")
                     .read_text(encoding="utf-8"))[0]
    gold = unit_text(raw["section"], " ".join(raw["candidates"][raw["answers"][0]].split()))
    assert examples[0].query == raw["question"]
    assert gold in examples[0].positives
    assert gold not in examples[0].negatives


def test_cuad_examples_leave_out_the_benchmark_contracts():
    rows = [json.loads(line) for line in (DATASETS / "cuad" / "clause_spans.dev.jsonl")
            .read_text(encoding="utf-8").splitlines()]
    contracts = sorted({r["contract_file"] for r in rows})
    kept, left_out = contracts[0], contracts[1:]
    examples = cuad_examples(DATASETS / "cuad", exclude=left_out, per_contract=3, seed=0)
    assert 1 <= len(examples) <= 3
    text = (DATASETS / "cuad" / "full_contract_txt" / kept).read_text(encoding="utf-8")
    flat = " ".join(text.split())
    for e in examples:
        assert e.source == "cuad" and e.query.endswith("?")
        assert all(p[:60] in flat for p in e.positives)


def test_xquad_keeps_only_the_training_articles():
    path = DATASETS / "xquad" / "xquad.en.json"
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    trained = {qa["question"] for i, a in enumerate(data) if i % 4 == 0
               for p in a["paragraphs"] for qa in p["qas"]}
    examples = xquad_sentence_examples(path, every=4, keep=0)
    assert examples and {e.query for e in examples} <= trained
    e = examples[0]
    assert e.positives[0] not in e.negatives


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_near_misses_add_the_question_and_the_heading(share):
    e = Example("What is the default port?", ("Server: The port is 8765.",), ("Other text.",),
                "t")
    out = with_near_misses([e], share=share, seed=0)[0]
    if share:
        assert out.negatives[:2] == ("What is the default port?", "Server")
    else:
        assert out == e
