"""Answer sentence selection on held-out questions: does the answer scorer put an answering
sentence first?

For each question of a development set, every candidate sentence is scored and ranked; we
report P@1 (the first is an answering sentence), MRR and MAP (the measures of the answer
sentence selection literature, e.g. TANDA), each with a bootstrap 95% interval over
questions, for:

* ``scorer``: the shipped answer scorer (``citewise.answer.scorer``), or ``--model FILE``;
* ``cosine``: the cosine of the default embedder (all-MiniLM-L6-v2) between question and
  sentence, the dense half of the rule-based ranking.

Sets (never trained on, see ``citewise.train.answer_data``): SelQA dev (``selqa-ass-dev.json``)
and TREC-QA dev (``dev-filtered.jsonl``); ``--limit`` takes the first N questions of each.

Usage::

    python benchmarks/answer_scorer.py [--model FILE] [--limit 300]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from citewise.answer.scorer import bundled_path, load_answer_scorer
from citewise.embed import load_embedder
from citewise.train.answer_data import _detokenize

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "answer_selection"


def selqa_dev(limit: int) -> list[tuple[str, str, list[str], set[int]]]:
    rows = json.loads((DATASETS / "selqa" / "selqa-ass-dev.json").read_text(encoding="utf-8"))
    return [(r["question"], r.get("section") or "", r["candidates"], set(r["answers"]))
            for r in rows[:limit] if r["answers"]]


def trec_dev(limit: int) -> list[tuple[str, str, list[str], set[int]]]:
    out = []
    for line in (DATASETS / "trecqa" / "dev-filtered.jsonl").read_text(
            encoding="utf-8").splitlines()[:limit]:
        r = json.loads(line)
        cands = [_detokenize(c["sentence"]) for c in r["candidates"]]
        gold = {i for i, c in enumerate(r["candidates"]) if c["label"]}
        if gold and len(gold) < len(cands):
            out.append((_detokenize(r["question"]), "", cands, gold))
    return out


def measures(scores: np.ndarray, gold: set[int]) -> tuple[float, float, float]:
    order = list(np.argsort(-scores, kind="stable"))
    ranks = sorted(order.index(g) + 1 for g in gold)
    ap = float(np.mean([(k + 1) / r for k, r in enumerate(ranks)]))
    return float(ranks[0] == 1), 1.0 / ranks[0], ap


def interval(values: list[float], seed: int = 0) -> str:
    a = np.asarray(values)
    rng = np.random.default_rng(seed)
    means = a[rng.integers(0, len(a), (1000, len(a)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return f"{a.mean():.3f} [{lo:.3f}, {hi:.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(bundled_path()))
    ap.add_argument("--limit", type=int, default=300)
    args = ap.parse_args()
    scorer = load_answer_scorer(args.model)
    assert scorer is not None
    embedder = load_embedder("minilm", 2)
    print("| set | questions | ranking | P@1 | MRR | MAP |\n|---|---|---|---|---|---|")
    for name, items in (("SelQA dev", selqa_dev(args.limit)), ("TREC-QA dev", trec_dev(args.limit))):
        rows: dict[str, list[tuple[float, float, float]]] = {"scorer": [], "cosine": []}
        for q, section, cands, gold in items:
            rows["scorer"].append(measures(scorer.probabilities(q, [(section, c) for c in cands]),
                                           gold))
            cos = embedder.embed_documents(cands) @ embedder.embed_query(q)
            rows["cosine"].append(measures(np.asarray(cos), gold))
        for ranking, ms in rows.items():
            cols = [interval([m[i] for m in ms]) for i in range(3)]
            print(f"| {name} | {len(ms)} | {ranking} | " + " | ".join(cols) + " |")


if __name__ == "__main__":
    main()
